"""The runs a comparison reads: a job folder, an MLflow run id, or the job runs of a sweep.

Reading is the job record's (giant.record.read.read_job), as a re-score's is, so a folder and a run id
give the same record. Each run becomes one paired unit per item: the label the job itself scored, i.e. the
majority vote of its runs with the job's recorded tie rule when runs_per_item > 1 (a single run's
label otherwise). The comparison therefore compares exactly the metric each job reported.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from mlflow.exceptions import MlflowException
from pydantic import BaseModel, ConfigDict

from giant.agent.modes import find_mode
from giant.config import TrackingSettings, compared_settings
from giant.errors import ConfigError
from giant.eval.voting import item_label
from giant.record import REQUESTS_FILE, SKIPPED, TRAJECTORY_PAGE, ResultRecord, has_trajectory, latest_by_slot
from giant.record.headline import method_label
from giant.record.read import RUN_ID, read_job
from giant.roles import flatten
from giant.tracking.job_runs import MlflowRuns
from giant.tracking.names import JOB_ROLE, OUTPUT_DIR_TAG, ROLE_TAG, SWEEP_ID_TAG, tag_filter

# What a trajectory page needs is the page, its JSON and its images; the recorded request bodies
# (record_requests=true) can be large and are not copied.
PAGE_ONLY = shutil.ignore_patterns(REQUESTS_FILE)
FIX = "pass job folders (holding results.jsonl) or MLflow run ids, or --sweep-id"


class ItemOutcome(BaseModel):
    """One item of one run, as the comparison pairs it."""

    model_config = ConfigDict(frozen=True)
    key: str
    truth: int
    label: int | None  # the job's scored label (voted when runs_per_item > 1); None: failed
    answer: str  # the model's answer text (the first run that gave the voted label)
    status: str  # of that run
    trajectory: str | None  # that run's trajectory folder, relative to the job folder
    hit: bool | None = None  # evidence found in any of its runs (docs/navigation.md); None: not annotated

    @property
    def correct(self) -> bool:
        return self.label is not None and self.label == self.truth


class RunData(BaseModel):
    """A finished job: where it came from, how it was configured, its items."""

    where: str  # as given on the command line
    run_id: str | None = None
    tracking_uri: str | None = None  # the store the run is in (to download its trajectories)
    folder: Path | None = None  # a local copy of the job folder, when there is one
    tags: dict[str, str] = {}
    task: str
    metric_name: str
    runs_per_item: int
    tie_rule: str
    config: dict[str, Any]
    items: dict[str, ItemOutcome]
    cost_usd: float | None = None  # the job's spend; None: unknown (a model without a price)
    dataset_digest: str = ""  # which version of its questions it scored ("": not recorded)

    @property
    def sweep_id(self) -> str | None:
        return self.tags.get(SWEEP_ID_TAG) or None

    @property
    def name(self) -> str:
        """mode, T, S, model and the vote: what a reader needs to tell runs apart."""
        agent, provider = self.config.get("agent", {}), self.config.get("provider", {})
        method = method_label(
            agent.get("mode", "?"),
            agent.get("max_steps", "?"),
            agent.get("crop_size", "?"),
            self.runs_per_item,
        )
        name = f"{method} {provider.get('model', '?')}"
        mode = find_mode(str(agent.get("mode")))
        if mode is not None and mode.study_cell(agent):  # a patch-design cell: its four factors
            name += " (" + ", ".join(mode.row_detail(key, agent.get(key)) for key in mode.row_settings) + ")"
        return name

    def settings(self) -> dict[str, str]:
        """The flattened config, only the settings whose role makes two runs different methods."""
        flat = flatten(self.config)
        return compared_settings({key: str(value) for key, value in flat.items() if value != {}})

    def fetch_trajectory(self, relative: str, target: Path) -> bool:
        """Copy one trajectory folder (trajectory.json, trajectory.html, images) into `target`, from
        the local job folder or else the MLflow run's artifacts; False when neither has it."""
        folder = self.folder or (Path(self.tags[OUTPUT_DIR_TAG]) if self.tags.get(OUTPUT_DIR_TAG) else None)
        if folder is not None and has_trajectory(folder / relative):
            shutil.copytree(folder / relative, target, ignore=PAGE_ONLY, dirs_exist_ok=True)
            return True
        if self.run_id is None:
            return False
        import mlflow

        try:
            with tempfile.TemporaryDirectory(prefix="giant-compare-") as tmp:
                client = mlflow.MlflowClient(tracking_uri=self.tracking_uri)
                local = client.download_artifacts(self.run_id, relative, tmp)
                shutil.copytree(local, target, ignore=PAGE_ONLY, dirs_exist_ok=True)
        except (MlflowException, OSError):
            return False
        return (target / TRAJECTORY_PAGE).is_file() or has_trajectory(target)


def outcomes(records: list[ResultRecord], runs_per_item: int, tie_rule: str) -> dict[str, ItemOutcome]:
    """Per item the job's scored label, as giant.eval.summarize scores it: the latest record of each
    run slot, failed runs do not vote, items whose every run was skipped are left out."""
    by_item: dict[str, list[ResultRecord]] = {}
    for record in latest_by_slot(records).values():
        if record.run_index < runs_per_item:
            by_item.setdefault(record.key, []).append(record)
    out = {}
    for key, runs in by_item.items():
        if all(r.status == SKIPPED for r in runs):
            continue
        runs.sort(key=lambda r: r.run_index)
        label = item_label(runs, runs_per_item, tie_rule)
        shown = next((r for r in runs if r.label == label), runs[0])
        hits = [r.navigation.hit for r in runs if r.navigation is not None and r.navigation.hit is not None]
        out[key] = ItemOutcome(
            hit=any(hits) if hits else None,
            key=key,
            truth=runs[0].truth,
            label=label,
            answer=shown.answer_text,
            status=shown.status,
            trajectory=shown.trajectory,
        )
    return out


def load_run(where: str, tracking: TrackingSettings) -> RunData:
    """One job folder or MLflow run id; a ConfigError (one line) for anything else."""
    folder = Path(where).expanduser()
    if not folder.is_dir() and not RUN_ID.fullmatch(where):
        raise ConfigError(f"{where}: no such job folder, and not an MLflow run id; {FIX}")
    try:
        source = read_job(where, MlflowRuns(tracking) if tracking.enabled else None)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("source=", "")) from None  # the re-score names its option
    summary = source.summary
    return RunData(
        where=where,
        run_id=source.run.run_id if source.run else None,
        tracking_uri=tracking.uri if source.run else None,
        folder=source.folder,
        tags=source.tags,
        task=summary.benchmark,
        metric_name=summary.metric_name,
        runs_per_item=summary.runs_per_item,
        tie_rule=summary.tie_rule,
        config=source.config,
        items=outcomes(source.records, summary.runs_per_item, summary.tie_rule),
        cost_usd=summary.totals.cost_usd,
        dataset_digest=digests.digest if (digests := summary.provenance.dataset_digests) else "",
    )


def sweep_run_ids(sweep_id: str, tracking: TrackingSettings, filter_string: str | None = None) -> list[str]:
    """The job runs of a sweep (tag sweep_id, giant.role=job), optionally narrowed by an MLflow filter,
    oldest first (the order the sweep ran them)."""
    from giant.tracking.mlflow_logger import open_experiment

    client, experiment_id = open_experiment(tracking)
    where = " and ".join(
        part
        for part in (tag_filter(SWEEP_ID_TAG, sweep_id), tag_filter(ROLE_TAG, JOB_ROLE), filter_string)
        if part
    )
    try:
        runs = client.search_runs([experiment_id], where, order_by=["attributes.start_time ASC"])
    except MlflowException as exc:
        raise ConfigError(
            f"--filter: MLflow cannot search with '{where}' ({str(exc).splitlines()[0]})"
        ) from None
    finished = [run.info.run_id for run in runs if run.info.status == "FINISHED"]
    if not finished:
        raise ConfigError(
            f"no finished job runs of sweep {sweep_id} matching '{where}' in experiment "
            f"'{tracking.experiment}' at {tracking.uri}; check the id (run_eval -m prints it)"
        )
    return finished
