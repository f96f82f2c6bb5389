"""A job's record turned into the facts every section works from: one `ItemRun` per (item, run index),
the latest result record of each with its trajectory, and the summary when the job wrote one. A job
that just ran hands its record in memory (`facts_of`); `python -m giant.report` reads a folder once
(`gather`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from giant.errors import ConfigError
from giant.record import TRAJECTORY_PAGE, JobLayout, ResultRecord, latest_by_slot, read_summary
from giant.record.read import JobRecord, Slot, read_runs
from giant.record.summary import Summary
from giant.record.trajectory import Trajectory

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ItemRun:
    """One item-run: its record, its trajectory when the job holds a readable one, and its
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


def facts_of(job: JobRecord) -> JobFacts:
    """The facts of a job's record in memory (the runner's, a re-score's)."""
    assert job.folder is not None  # the report is written into the job's folder
    return _facts(JobLayout(job.folder), job.summary, job.records, job.trajectories)


def gather(out_dir: Path) -> JobFacts:
    """Everything the report shows, read once from `out_dir`; a folder that is not a job is one line."""
    layout = JobLayout(out_dir)
    if not layout.results.is_file():
        raise ConfigError(
            f"{out_dir}: no {layout.results.name} here; pass the folder of a job (its output_dir)"
        )
    records, trajectories = read_runs(out_dir)
    return _facts(layout, _summary(layout), records, trajectories)


def _facts(
    layout: JobLayout,
    summary: Summary | None,
    records: list[ResultRecord],
    trajectories: dict[Slot, Trajectory],
) -> JobFacts:
    latest = latest_by_slot(records).values()
    runs = [ItemRun(record, trajectories.get(record.slot), _page(layout, record)) for record in latest]
    return JobFacts(layout=layout, summary=summary, runs=runs)


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
