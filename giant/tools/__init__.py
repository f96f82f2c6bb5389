"""Tools the navigating agent may consult besides cropping (paper Table 3: CONCH).

A tool is a registered `Tool` class (giant.tools.base: the contract) in a module or package here,
imported the first time the registry (`TOOLS`, giant.registry) is read, whatever was imported before;
its settings (`tools.<name>`, conf/tools/<name>.yaml) join `ToolSettings` and `agent.tools`
enables it per run. This package imports no model code: PyTorch is loaded only when a run enables a
tool (the `conch` extra).
"""

from typing import TYPE_CHECKING, Any

from giant.tools.base import Seen, Tool, ToolContext, ToolRecord, UnusableCall
from giant.tools.registry import TOOLS, load_tools, loaded

if TYPE_CHECKING:
    from giant.tools.settings import ToolSettings


def __getattr__(name: str) -> Any:
    if name == "ToolSettings":  # built from the registry: importing it imports every tool package
        from giant.tools.settings import ToolSettings

        return ToolSettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "TOOLS",
    "Seen",
    "Tool",
    "ToolContext",
    "ToolRecord",
    "ToolSettings",
    "UnusableCall",
    "load_tools",
    "loaded",
]
