"""The tools' settings (`tools.<name>.*`, defaults in conf/tools/<name>.yaml): one field per
registered tool, holding that tool's own settings model.

Hydra composes every conf/tools/<name>.yaml (giant.config), so a run holds every tool's settings; a
field is None only where a record keeps just the tools its run enabled (`RunSettings.record`, a
re-score), and a tool that `agent.tools` names without settings is one ConfigError line (load_tools).
Importing this module reads the registry, which imports every tool package: a tool module must not
import it (or giant.config) at its top."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, create_model

from giant import registry

if TYPE_CHECKING:
    ToolSettings = BaseModel
else:
    # Every tool's settings; a tool runs only when `agent.tools` names it.
    ToolSettings = create_model(
        "ToolSettings",
        __config__=ConfigDict(extra="forbid"),
        **{name: (model | None, None) for name, model in registry.settings_models("tool").items()},
    )
