"""A job's record (`JobRecord`): what the runner returns, so the process that wrote a job never reads
its folder back, and what `read_job(where, runs)` reads from a finished job's folder or MLflow run for a
re-score and a comparison (a folder and a run id give the same record; `read_runs`: a folder's item-runs,
read once). The MLflow side comes in as a `RunStore` (giant.tracking.job_runs.MlflowRuns): the record
needs no MLflow, and the job's files are read here only."""

from __future__ import annotations

import logging
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from giant.errors import ConfigError
from giant.record.folder import has_trajectory, read_resolved_config, read_summary, read_trajectory
from giant.record.layout import CONFIG_ARTIFACTS, JobLayout
from giant.record.results import ResultRecord, latest_by_slot, read_results
from giant.record.summary import Summary
from giant.record.trajectory import Trajectory

log = logging.getLogger(__name__)

RUN_ID = re.compile(r"[0-9a-f]{32}")
FIX = "pass source=<a job folder holding results.jsonl> or source=<an MLflow run id>"
Slot = tuple[str, int]  # (item key, run index)


@dataclass(frozen=True)
class LoggedRun:
    """What the record keeps of a job's MLflow run."""

    run_id: str
    tags: dict[str, str]
    start_time: int  # when the run's configuration first ran (ms): a re-score's source's, else its own


class RunStore(Protocol):
    """The MLflow store a job's run is looked up in."""

    uri: str

    def logged(self, folder: Path) -> LoggedRun | None:
        """The newest run that logged `folder` (its output_dir tag), if any."""

    def run(self, run_id: str) -> LoggedRun:
        """The run; a ConfigError of one line when the store has no such run."""

    def download(self, run_id: str, artifact: str, folder: Path) -> Path | None:
        """One artifact of the run into `folder`; None when the run has no such artifact."""


@dataclass
class JobRecord:
    """A finished job: its result records (results.jsonl's lines, in order), summary and settings, the
    trajectories of its item-runs (the runner's; read_job leaves them on disk), and where it came from."""

    where: str  # the folder or run id as given
    records: list[ResultRecord]
    summary: Summary
    config: dict[str, Any] = field(default_factory=dict)  # resolved_config.json
    folder: Path | None = None  # the job folder, when read from one (its trajectories are there)
    run: LoggedRun | None = None  # its MLflow run, when it has one
    tags: dict[str, str] = field(default_factory=dict)  # the run's tags ({} without a run)
    trajectories: dict[Slot, Trajectory] = field(default_factory=dict)


def read_job(where: str, runs: RunStore | None) -> JobRecord:
    """A job folder (with its run, when `runs` has one that logged it) or an MLflow run id (read from
    `runs`; None: tracking is off). Anything else, or an unfinished job, is a ConfigError of one line."""
    folder = Path(where).expanduser()
    if folder.is_dir():
        job = _read_folder(where, folder)
        job.folder = folder.resolve()
        if runs is not None and (run := runs.logged(folder)) is not None:
            job.run, job.tags = run, run.tags
        return job
    if not RUN_ID.fullmatch(where):
        raise ConfigError(f"source={where}: no such job folder, and not an MLflow run id; {FIX}")
    if runs is None:
        raise ConfigError(f"source={where}: an MLflow run id needs tracking.enabled=true to read the run")
    run = runs.run(where)
    with tempfile.TemporaryDirectory(prefix="giant-read-job-") as tmp:
        layout = JobLayout(Path(tmp))
        wanted = {
            layout.results.name: layout.results,
            layout.summary.name: layout.summary,
            f"{CONFIG_ARTIFACTS}/{layout.resolved_config.name}": layout.resolved_config,
        }
        for name, target in wanted.items():
            # each into a folder of its own: MLflow keeps or drops the artifact's folder by store
            local = runs.download(where, name, Path(tempfile.mkdtemp(dir=tmp)))
            if local is None:
                raise ConfigError(
                    f"source={where}: the run has no {name} artifact (it did not finish); {FIX}"
                )
            local.replace(target)
        job = _read_folder(where, Path(tmp))
    job.run, job.tags = run, run.tags
    return job


def _read_folder(where: str, folder: Path) -> JobRecord:
    layout = JobLayout(folder)
    files = (layout.results, layout.summary, layout.resolved_config)
    missing = [path.name for path in files if not path.is_file()]
    if missing:
        raise ConfigError(f"source={where}: {', '.join(missing)} missing, not a finished job folder; {FIX}")
    try:
        summary = read_summary(folder)
        config = read_resolved_config(folder)
    except (ValueError, ValidationError) as exc:
        raise ConfigError(
            f"source={where}: unreadable job record ({str(exc).splitlines()[0]}); {FIX}"
        ) from None
    return JobRecord(where, read_results(layout.results), summary, config)


def read_runs(folder: Path) -> tuple[list[ResultRecord], dict[Slot, Trajectory]]:
    """A job folder's result records and the trajectories their latest lines name, each read once."""
    records = read_results(JobLayout(folder).results)
    return records, read_trajectories(folder, records)


def read_trajectories(folder: Path, records: list[ResultRecord]) -> dict[Slot, Trajectory]:
    """The trajectory of each latest record that names one in `folder`; a missing or unreadable one is
    left out (a warning names it): it costs its page and its navigation facts, never the job."""
    found = {}
    for slot, record in latest_by_slot(records).items():
        where = folder / record.trajectory if record.trajectory else None
        if where is None or not has_trajectory(where):
            continue
        try:
            found[slot] = read_trajectory(where)
        except ValidationError as exc:
            log.warning("%s has no valid trajectory (%s)", where, exc.errors()[0]["msg"])
    return found
