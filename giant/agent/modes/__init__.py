"""Every agent mode, registered: a module in this package with a `@register` Mode subclass is found
at import, and its settings model joins `AgentConfig`, the union the run's config is validated into
(docs/ARCHITECTURE.md, "Adding a mode")."""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING, Annotated, Any, Union

from pydantic import Field

from giant.agent.config import BaseAgentConfig
from giant.agent.modes.base import MODES, CallPlan, Mode, find_mode, mode_of, modes_with_setting, register
from giant.agent.shipped import shipped_agent

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")

if TYPE_CHECKING:
    AgentConfig = BaseAgentConfig
else:
    AgentConfig = Annotated[
        Union[tuple(mode.settings for mode in MODES.values())],  # noqa: UP007 (built at runtime)
        Field(discriminator="mode"),
    ]


def parse_agent(data: dict[str, Any], provider: str | None = None) -> BaseAgentConfig:
    """Validate a mapping into its mode's settings (`mode` absent: giant), each key it lacks taken
    from conf/ with `provider`'s S (giant.agent.shipped); outside Hydra (library use, tests), and for
    modes registered after import, which the `AgentConfig` union cannot know."""
    name = str(data.get("mode", "giant"))
    mode = find_mode(name)
    if mode is None:
        raise ValueError(f"agent.mode={name}: no such mode; choose one of {', '.join(sorted(MODES))}")
    return mode.settings.model_validate({**shipped_agent(name, provider), **data, "mode": name})


__all__ = [
    "MODES",
    "AgentConfig",
    "CallPlan",
    "Mode",
    "find_mode",
    "mode_of",
    "modes_with_setting",
    "parse_agent",
    "register",
]
