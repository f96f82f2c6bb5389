"""The registered tools (`agent.tools=[conch]`) and loading the ones a run enables.

Every package under giant/tools/ is a tool: its `@register` runs when the package is imported, and the
packages are imported the first time the registry is read (`TOOLS`), not when giant.tools is. So
giant.tools (the contract) and what imports it are complete before any tool package starts, and no
import at a tool module's top, the episode state's included, makes a circle at start-up (the layers
still want the episode state under TYPE_CHECKING: the `Tool` docstring). Only what is built from the
registry at import time (giant.tools.settings, hence giant.config and the entry points) must not be
imported by a tool module at its top; reading the registry while the tools are being imported is one
clear ImportError instead of a registry silently missing tools.

`load_tools` loads every enabled tool once per run, before any item starts, and turns whatever stands
in the way (a missing extra, missing or gated weights, a wrong file) into one `ConfigError` line. The
loaded tools travel with the run to each episode (`run_episode(tools=...)`). Loading is cached per
settings, so a Hydra sweep run in one process reads the weights once.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel

from giant.errors import ConfigError
from giant.tools.base import Tool, ToolRecord

T = TypeVar("T", bound=type[Tool[Any, Any, Any]])

_registered: dict[str, type[Tool[Any, Any, Any]]] = {}
_loaded: dict[tuple[str, str], Tool[Any, Any, Any]] = {}  # (name, settings JSON) -> the loaded tool
_importing: str | None = None  # the tool package being imported while the registry fills
_found = False  # every tool package under giant/tools/ imported


def _find_tools() -> None:
    """Import every tool package under giant/tools/ (sorted: the action union's order) once."""
    global _found, _importing
    if _found:
        return
    if _importing is not None:
        raise ImportError(
            f"giant.tools.{_importing} reads the tool registry while the tools are being imported: it "
            "imports, at its top, a module built from the registry (giant.tools.settings, giant.config); "
            "import that inside the function that needs it"
        )
    try:
        for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
            if module.ispkg:
                _importing = module.name
                importlib.import_module(f"giant.tools.{module.name}")
        _found = True
    finally:
        _importing = None


class _Registry(Mapping[str, type[Tool[Any, Any, Any]]]):
    """The registered tools by name; reading it first imports every tool package (`_find_tools`)."""

    def __getitem__(self, name: str) -> type[Tool[Any, Any, Any]]:
        _find_tools()
        return _registered[name]

    def __iter__(self) -> Iterator[str]:
        _find_tools()
        return iter(_registered)

    def __len__(self) -> int:
        _find_tools()
        return len(_registered)

    def __repr__(self) -> str:
        return f"TOOLS({', '.join(self)})"


TOOLS: Mapping[str, type[Tool[Any, Any, Any]]] = _Registry()


def register(cls: T) -> T:
    """Class decorator: the tool's name joins the action union, the schema and the settings."""
    if cls.name in _registered:
        raise ValueError(f"tool '{cls.name}' is registered twice")
    _registered[cls.name] = cls
    return cls


def unregister(name: str) -> None:
    """Drop a tool (tests that register a throwaway tool clean up with this)."""
    _registered.pop(name, None)


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


def known_tool(name: str) -> str:
    """A registered tool's name (the check on each of `agent.tools`)."""
    if name not in TOOLS:
        raise ValueError(f"no tool {name!r}; registered: {', '.join(sorted(TOOLS))}")
    return name


ToolName = Annotated[str, AfterValidator(known_tool)]
