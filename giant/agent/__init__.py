"""The navigation agent: Algorithm 1 and its modes, recorded as trajectories.

`run_episode` is imported lazily: `giant.agent.config` and `giant.record.trajectory` are light shared
contracts that the config and eval layers import without pulling in OpenSlide and the providers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from giant.agent.episode import run_episode

__all__ = ["run_episode"]


def __getattr__(name: str) -> Any:
    if name == "run_episode":
        from giant.agent.episode import run_episode

        return run_episode
    raise AttributeError(f"module 'giant.agent' has no attribute {name!r}")
