"""The registered tools (`agent.tools=[conch]`) and loading the ones a run enables.

Every module or package under giant/tools/ besides the contract (base, registry, scorer, settings) is a
tool: its `@register("tool")` runs when it is imported, and the registry (giant.registry) imports them
the first time the tools are read (`TOOLS`), not when giant.tools is. Only what is built from the registry
at import time (giant.tools.settings, hence giant.config and the entry points) must not be imported by
a tool module at its top: that is one ImportError naming the cause.

`load_tools` loads every enabled tool once per run, before any item starts, and turns whatever stands
in the way (a missing extra, missing or gated weights, a wrong file) into one `ConfigError` line. The
loaded tools travel with the run to each episode (`run_episode(tools=...)`). Loading is cached per
settings, so a Hydra sweep run in one process reads the weights once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel

from giant import registry
from giant.errors import ConfigError
from giant.tools.base import Tool, ToolRecord

_loaded: dict[tuple[str, str], Tool[Any, Any, Any]] = {}  # (name, settings JSON) -> the loaded tool

# The registered tools by name.
TOOLS: Mapping[str, type[Tool[Any, Any, Any]]] = registry.members("tool")


def record_models() -> dict[str, type[ToolRecord]]:
    """What the trajectory keeps of each tool's calls, by tool name."""
    return {name: tool.record for name, tool in TOOLS.items()}


def load_tools(enabled: Sequence[str], settings: BaseModel | None) -> dict[str, Tool[Any, Any, Any]]:
    """Every enabled tool, loaded (or reused) with its settings (`settings.<name>`)."""
    if enabled and settings is None:
        raise ConfigError(f"agent.tools={list(enabled)} but the config has no tools section: add conf/tools/")
    tools: dict[str, Tool[Any, Any, Any]] = {}
    for name in enabled:
        part = getattr(settings, name, None)
        if part is None:
            raise ConfigError(
                f"agent.tools names {name} but tools.{name} is not set: add conf/tools/{name}.yaml"
            )
        key = (name, part.model_dump_json())
        if key not in _loaded:
            _loaded[key] = TOOLS[name].load(part)
        tools[name] = _loaded[key]
    return tools


def loaded(tools: Mapping[str, Tool[Any, Any, Any]], name: str) -> Tool[Any, Any, Any]:
    """The loaded tool `agent.tools` names; one line when the entry point did not load it."""
    tool = tools.get(name)
    if tool is None:
        raise ConfigError(
            f"agent.tools names {name} but its model is not loaded: the entry point must pass "
            "giant.tools.load_tools(...) to the episode"
        )
    return tool


ToolName = Annotated[str, AfterValidator(partial(registry.known, "tool"))]
