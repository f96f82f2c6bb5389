"""Every agent mode, registered: a module in this package with a `@register("mode")` Mode subclass is found
by the registry (giant.registry) the first time the modes are read, and its settings model joins
`AgentConfig`, the union the run's config is validated into (docs/ARCHITECTURE.md, "Adding a mode")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from giant import registry
from giant.agent.config import BaseAgentConfig
from giant.agent.modes.base import MODES, CallPlan, Mode, find_mode, mode_of, modes_with_setting
from giant.agent.shipped import shipped_agent

if TYPE_CHECKING:
    AgentConfig = BaseAgentConfig
else:
    AgentConfig = registry.settings_union("mode", "mode")


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
]
