"""The tools' settings (`tools.<name>.*`, defaults in conf/tools/<name>.yaml): one field per
registered tool, holding that tool's own settings model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, create_model

from giant.tools.registry import TOOLS

if TYPE_CHECKING:
    ToolSettings = BaseModel
else:
    # Every tool's settings; a tool runs only when `agent.tools` names it.
    ToolSettings = create_model(
        "ToolSettings",
        __config__=ConfigDict(extra="forbid"),
        **{name: (tool.settings, ...) for name, tool in TOOLS.items()},
    )
