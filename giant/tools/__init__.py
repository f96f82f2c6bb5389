"""Tools the navigating agent may consult besides cropping (paper Table 3: CONCH).

A tool is a registered `Tool` class (giant.tools.base: the contract) in a module or package here,
imported the first time the registry (`TOOLS`, giant.registry) is read, whatever was imported before;
its settings (`tools.<name>`, conf/tools/<name>.yaml) join `ToolSettings` and `agent.tools`
enables it per run (`ToolSettings`, giant.tools.settings, is built from the registry: import it
from there). This package imports no model code: PyTorch is loaded only when a run enables a
tool (the `conch` extra).
"""

from giant.tools.base import Seen, Tool, ToolContext, ToolRecord, UnusableCall
from giant.tools.registry import TOOLS, load_tools, loaded

__all__ = [
    "TOOLS",
    "Seen",
    "Tool",
    "ToolContext",
    "ToolRecord",
    "UnusableCall",
    "load_tools",
    "loaded",
]
