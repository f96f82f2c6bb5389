"""A job folder read into the facts every section works from: one `ItemRun` per (item, run index),
the latest result record of each with its trajectory, and summary.json when the job wrote one."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from giant.errors import ConfigError
from giant.record import (
    TRAJECTORY_PAGE,
    JobLayout,
    ResultRecord,
    has_trajectory,
    latest_by_slot,
    read_results,
    read_summary,
    read_trajectory,
)
from giant.record.summary import Summary
from giant.record.trajectory import Trajectory

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ItemRun:
    """One item-run: its record, its trajectory when the folder still holds a readable one, and its
    trajectory.html relative to the job folder when that exists (a re-score's folder has neither)."""

    record: ResultRecord
    trajectory: Trajectory | None
    page: str | None


@dataclass(frozen=True)
class JobFacts:
    layout: JobLayout
    summary: Summary | None
    runs: list[ItemRun]

    @property
    def trajectories(self) -> list[Trajectory]:
        return [run.trajectory for run in self.runs if run.trajectory is not None]


def gather(out_dir: Path) -> JobFacts:
    """Everything the report shows, read from `out_dir`; a folder that is not a job is one line."""
    layout = JobLayout(out_dir)
    if not layout.results.is_file():
        raise ConfigError(
            f"{out_dir}: no {layout.results.name} here; pass the folder of a job (its output_dir)"
        )
    latest = latest_by_slot(read_results(layout.results))
    runs = [ItemRun(record, _trajectory(layout, record), _page(layout, record)) for record in latest.values()]
    return JobFacts(layout=layout, summary=_summary(layout), runs=runs)


def _summary(layout: JobLayout) -> Summary | None:
    if not layout.summary.is_file():
        return None  # a job stopped before its first summary: the records still make a report
    try:
        return read_summary(layout.out_dir)
    except ValidationError as exc:
        log.warning(
            "report: %s is not a summary (%s); the page leaves it out", layout.summary, exc.errors()[0]
        )
        return None


def _page(layout: JobLayout, record: ResultRecord) -> str | None:
    if not record.trajectory:
        return None
    page = f"{record.trajectory}/{TRAJECTORY_PAGE}"
    return page if (layout.out_dir / page).is_file() else None


def _trajectory(layout: JobLayout, record: ResultRecord) -> Trajectory | None:
    """A missing or unreadable trajectory leaves its row without navigation facts, never the page."""
    if not record.trajectory:
        return None
    folder = layout.out_dir / record.trajectory
    if not has_trajectory(folder):
        return None
    try:
        return read_trajectory(folder)
    except ValidationError as exc:
        log.warning("report: %s has no valid trajectory (%s)", folder, exc.errors()[0]["msg"])
        return None
