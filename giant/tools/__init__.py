"""Tools the navigating agent may consult besides cropping (paper Table 3: CONCH).

A tool is a registered `Tool` class (giant.tools.base: the contract) in a package here, found at import
like the modes; its settings (`tools.<name>`, conf/tools/) join `ToolSettings` and `agent.tools`
enables it per run. This package imports no model code: PyTorch is loaded only when a run enables a
tool (the `conch` extra).
"""

import importlib
import pkgutil

from giant.tools.base import Seen, Tool, ToolRecord, UnusableCall
from giant.tools.registry import TOOLS, load_tools, loaded, register, unregister

for _module in pkgutil.iter_modules(__path__):
    if _module.ispkg:
        importlib.import_module(f"{__name__}.{_module.name}")

from giant.tools.settings import ToolSettings  # noqa: E402  (built from the tools found above)

__all__ = [
    "TOOLS",
    "Seen",
    "Tool",
    "ToolRecord",
    "ToolSettings",
    "UnusableCall",
    "load_tools",
    "loaded",
    "register",
    "unregister",
]
