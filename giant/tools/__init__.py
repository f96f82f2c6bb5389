"""Tools the navigating agent may consult besides cropping (paper Table 3: CONCH).

A tool is a registered scorer (`registry.LOADERS`) with its own settings (`tools.<name>`, conf/tools/),
enabled per run by `agent.tools`. This package imports no model code: PyTorch is loaded only when a
run enables a tool (the `conch` extra).
"""

from giant.tools.registry import active, prepare, using
from giant.tools.scorer import Scorer
from giant.tools.settings import ConchSettings, ToolSettings

__all__ = ["ConchSettings", "Scorer", "ToolSettings", "active", "prepare", "using"]
