"""The tools a run may enable (`agent.tools=[conch]`) and the scorers loaded for them.

`prepare` loads every enabled tool once per process, before any item starts, and turns whatever
stands in the way (a missing extra, missing or gated weights, a wrong file) into one `ConfigError`
line. The navigation loop then asks `active(name)`. Loading is cached per settings, so a Hydra sweep
run in one process loads the weights once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from giant.errors import ConfigError
from giant.tools.scorer import Scorer
from giant.tools.settings import ToolSettings


def _load_conch(settings: ToolSettings) -> Scorer:
    from giant.tools.conch.load import load_conch

    return load_conch(settings.conch)


@dataclass(frozen=True)
class ActiveTool:
    """A loaded tool as the agent uses it: the scorer and the most hypotheses one call may send."""

    scorer: Scorer
    max_hypotheses: int


LOADERS: dict[str, Callable[[ToolSettings], Scorer]] = {"conch": _load_conch}
_loaded: dict[tuple[str, str], Scorer] = {}
_active: dict[str, ActiveTool] = {}


def prepare(enabled: Sequence[str], settings: ToolSettings | None) -> dict[str, ActiveTool]:
    """Load (or reuse) the scorer of every enabled tool and make them the active ones."""
    _active.clear()
    if enabled and settings is None:
        raise ConfigError(f"agent.tools={list(enabled)} but the config has no tools section: add conf/tools/")
    for name in enabled:
        assert settings is not None
        part = getattr(settings, name)
        key = (name, part.model_dump_json())
        if key not in _loaded:
            _loaded[key] = LOADERS[name](settings)
        _active[name] = ActiveTool(_loaded[key], part.max_hypotheses)
    return dict(_active)


def active(name: str) -> ActiveTool:
    """The tool `prepare` loaded for `name`."""
    tool = _active.get(name)
    if tool is None:
        raise ConfigError(
            f"agent.tools names {name} but its model is not loaded: the entry point must call "
            "giant.tools.prepare before the first episode"
        )
    return tool


@contextmanager
def using(name: str, scorer: Scorer, max_hypotheses: int) -> Iterator[ActiveTool]:
    """Make `scorer` the active one for `name` inside the block (tests, benchmarks)."""
    before = _active.get(name)
    _active[name] = tool = ActiveTool(scorer, max_hypotheses)
    try:
        yield tool
    finally:
        if before is None:
            _active.pop(name, None)
        else:
            _active[name] = before
