"""One episode: an item on its slide under one mode, ending in a Trajectory that is always returned.

Item-level problems (missing or unreadable slide, fatal provider error, exhausted retries, the
per-item timeout) become a Status and a reason, never an exception: a batch run of 934 items must not
stop at one bad slide. The one exception that leaves is the run's own end (a stop request or a halt,
giant.agent.limits.LimitExceeded with `ends_run`): the item is then not over, and keeps no trajectory.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from giant.agent.config import BaseAgentConfig
from giant.agent.episode_state import EpisodeEnd, EpisodeState, compute_totals
from giant.agent.images import ImageStore
from giant.agent.limits import LimitExceeded, Limits, SharedLimits
from giant.agent.modes import mode_of
from giant.core import Item
from giant.errors import ConfigError
from giant.llm.ledger import Ledger
from giant.llm.types import Provider
from giant.record import REQUESTS_FILE, write_trajectory
from giant.record.navigation import Thresholds, navigation
from giant.record.trajectory import Trajectory
from giant.tools import Tool
from giant.wsi import SlideError, SlideMissing
from giant.wsi.slide import shared_slide


class EpisodeCrashed(Exception):
    """An episode ended by an exception nothing classified (a bug in giant, a tool or an SDK): the
    trajectory up to it (its calls, paid ones included, written beside its images) travels with the
    error, so the runner records what was paid and the traceback, and counts the item-run unmeasured."""

    def __init__(self, trajectory: Trajectory, error: Exception) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.trajectory = trajectory
        self.error = error


async def run_episode(  # noqa: PLR0913  the episode's inputs, each from a different owner (item, slide, provider, tools, limits)
    item: Item,
    slide_path: Path,
    provider: Provider,
    cfg: BaseAgentConfig,
    *,
    out_dir: Path | None,
    run_index: int = 0,
    seed: int = 0,
    record_requests: bool = False,
    ledger: Ledger | None = None,
    limits: SharedLimits | None = None,
    tools: Mapping[str, Tool[Any, Any, Any]] | None = None,
    thresholds: Thresholds | None = None,
) -> Trajectory:
    """Run one item under its mode (`cfg.mode`, a registered giant.agent.modes name); writes
    out_dir/trajectory.json and out_dir/<sha256>.jpg: hard links to the ledger's images when the
    provider keeps its calls in `ledger` (the images it is sent are then on disk once). `limits` are
    the run's, checked with the item budget before every call (giant.agent.limits). `tools` are the
    run's loaded tools (giant.tools.load_tools), those `agent.tools` names used by the mode.
    `thresholds` (the run's `navigation` settings): the trajectory then records where the model looked
    (giant.record.navigation) on the tissue mask its crops' fractions came from."""
    mode = mode_of(cfg)
    started = time.monotonic()
    slide_path = Path(slide_path)
    traj = Trajectory(
        item_key=item.key,
        run_index=run_index,
        mode=cfg.mode,
        max_steps=cfg.max_steps,
        crop_size=cfg.crop_size,
        provider=provider.name,
        model=provider.model,
        slide_path=str(slide_path),
        question=item.prompt,
    )
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    record_path = str(out_dir / REQUESTS_FILE) if record_requests and out_dir is not None else None
    ep: EpisodeState[Any] | None = None
    deadline = asyncio.timeout(cfg.item_timeout_s)
    try:
        async with deadline:
            with shared_slide(slide_path) as slide:  # one open file per slide, however many episodes
                traj.slide_width, traj.slide_height = slide.width, slide.height
                traj.slide_mpp = slide.mpp_x
                store = ImageStore(out_dir, ledger)
                ep = EpisodeState(
                    item,
                    slide,
                    provider,
                    cfg,
                    traj,
                    store,
                    seed=seed,
                    record_path=record_path,
                    limits=Limits(cfg.item_budget_usd, limits),
                    tools=tools or {},
                )
                await mode.run(ep)
    except EpisodeEnd as end:
        traj.status, traj.reason = end.status, end.reason
    except SlideMissing as exc:  # planned for: skip_missing, resume and the breaker treat it apart
        traj.status, traj.reason = "slide_missing", str(exc)
    except SlideError as exc:
        traj.status, traj.reason = "slide_error", str(exc)
    except TimeoutError as exc:
        if not deadline.expired():
            raise _crashed(traj, ep, started, out_dir, exc) from exc
        why = f"item timeout of {cfg.item_timeout_s:g} s reached"
        if ep is not None:
            ep.record_interrupted(why)
        traj.status, traj.reason = "timeout", f"{why}; the partial trajectory is kept"
    except (LimitExceeded, ConfigError):  # the run's stop or halt, or its setup: the item is not over
        raise
    except Exception as exc:
        raise _crashed(traj, ep, started, out_dir, exc) from exc
    _close(traj, ep, started)
    if thresholds is not None:
        traj.navigation = navigation(traj, ep.tissue if ep else None, thresholds)
    if out_dir is not None:
        write_trajectory(out_dir, traj)
    return traj


def _close(traj: Trajectory, ep: EpisodeState[Any] | None, started: float) -> None:
    traj.totals = compute_totals(
        traj,
        steps=ep.steps if ep else 0,
        crops=ep.crops if ep else 0,
        seconds=time.monotonic() - started,
    )


def _crashed(
    traj: Trajectory, ep: EpisodeState[Any] | None, started: float, out_dir: Path | None, error: Exception
) -> EpisodeCrashed:
    """The episode as far as it went (written, with its totals), carried by the error that ended it."""
    traj.reason = f"{type(error).__name__}: {error}"
    _close(traj, ep, started)
    if out_dir is not None:
        write_trajectory(out_dir, traj)
    return EpisodeCrashed(traj, error)
