"""One MLflow run per Hydra job, a child of its sweep's parent run; names in giant.tracking.names.

The client API (`MlflowClient`) is used instead of the fluent one so that no global "active run"
leaks between jobs of a sweep that share a process (Hydra's basic launcher).
"""

from __future__ import annotations

import logging
import tempfile
import time
import urllib.parse
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx2
from mlflow.entities import Experiment, LifecycleStage, Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from mlflow.utils.file_utils import local_file_uri_to_path
from mlflow.utils.time import get_current_time_millis
from pydantic import BaseModel

from giant.agent.modes import mode_of
from giant.atomic import write_atomic
from giant.config import RunSettings, TrackingSettings
from giant.core import Item
from giant.data.digest import DatasetDigests
from giant.errors import ConfigError
from giant.record import SWEEP_FILE
from giant.record.logged import Logged, logged_values
from giant.record.summary import Summary
from giant.roles import flatten
from giant.secrets import contains_secret, redact, scrub, secret_values
from giant.storage import is_stored_image, link_or_copy
from giant.tracking.names import (
    CONFIG_HASH_TAG,
    DATASET_CONTEXT,
    DATASET_DIGEST_TAG,
    DATASET_HASH_TAG,
    DATASET_TAG,
    EXPERIMENT_KIND_TAG,
    FAILURE_TAG,
    GIT_COMMIT_TAG,
    INCOMPLETE_REASON_TAG,
    INTERRUPTION_TAG,
    JOB_ROLE,
    METRIC_NAME_TAG,
    MODEL_DEVELOPMENT,
    PARENT_TAG,
    ROLE_TAG,
    SETTING_TAGS,
    STATUS_TAG,
    SWEEP_ID_TAG,
)
from giant.tracking.params import to_params
from giant.tracking.store import ensure_sqlite_store, opening_store, sqlite_path

log = logging.getLogger(__name__)


class SweepInfo(BaseModel):
    """Written by the sweep callback before any job starts; read by every job (any process, any node)."""

    tracking_uri: str
    experiment_id: str
    parent_run_id: str

    @classmethod
    def read(cls, sweep_dir: Path) -> SweepInfo | None:
        path = sweep_dir / SWEEP_FILE
        return cls.model_validate_json(path.read_text(encoding="utf-8")) if path.is_file() else None

    def write(self, sweep_dir: Path) -> None:
        """Whole or not at all (giant.atomic): every job, and a rerun of the sweep, reads it back."""
        write_atomic(sweep_dir / SWEEP_FILE, (self.model_dump_json(indent=2) + "\n").encode())


def artifact_location(tracking: TrackingSettings) -> str | None:
    """Artifacts beside a local sqlite store (`mlruns/artifacts`), else the server's default."""
    if tracking.artifact_location:
        return tracking.artifact_location
    database = sqlite_path(tracking.uri)
    return (database.parent / "artifacts").as_uri() if database is not None else None


def check_server(uri: str, timeout_s: float = 5.0) -> None:
    """An MLflow server that cannot be reached fails in seconds with one line: MLflow's own client
    retries for about four minutes and then raises a traceback."""
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme not in ("http", "https"):
        return
    where = f"{parts.scheme}://{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
    try:
        # any status will do: a server (perhaps behind a proxy without /health) answered
        httpx2.get(f"{where}/health", timeout=timeout_s)
    except (httpx2.RequestError, httpx2.InvalidURL) as exc:
        raise ConfigError(
            f"tracking.uri: no MLflow server answers at {where} ({exc}); start it, "
            "fix tracking.uri / MLFLOW_TRACKING_URI, or pass tracking.enabled=false"
        ) from None


def open_experiment(tracking: TrackingSettings) -> tuple[MlflowClient, str]:
    """The client and experiment id; creates the sqlite file (whole or not at all), its folder and the
    experiment if needed. A sqlite store MLflow cannot open is a one-line `ConfigError`."""
    database = sqlite_path(tracking.uri)
    if database is not None:
        ensure_sqlite_store(database, artifact_location(tracking))
    check_server(tracking.uri)
    with opening_store(tracking.uri):  # the client opens (and checks) the store
        client = MlflowClient(tracking_uri=tracking.uri)
        experiment = client.get_experiment_by_name(tracking.experiment)
    if experiment is not None:
        mark_model_development(client, experiment)
        return client, experiment.experiment_id
    try:
        return client, client.create_experiment(
            tracking.experiment,
            artifact_location=artifact_location(tracking),
            tags={EXPERIMENT_KIND_TAG: MODEL_DEVELOPMENT},
        )
    except MlflowException:  # created meanwhile by a parallel job
        experiment = client.get_experiment_by_name(tracking.experiment)
        if experiment is None:
            raise
        mark_model_development(client, experiment)
        return client, experiment.experiment_id


def mark_model_development(client: MlflowClient, experiment: Experiment) -> None:
    """Tag an experiment that has no kind yet (made by an older giant, or by hand) as model
    development, so that MLflow's UI opens it on the runs table; a kind set by someone is kept."""
    if EXPERIMENT_KIND_TAG in experiment.tags or experiment.lifecycle_stage != LifecycleStage.ACTIVE:
        return
    client.set_experiment_tag(experiment.experiment_id, EXPERIMENT_KIND_TAG, MODEL_DEVELOPMENT)


def run_name(settings: RunSettings, dataset: str) -> str:
    if settings.tracking.run_name:
        return settings.tracking.run_name
    return mode_of(settings.agent).run_name(settings.agent, dataset)


def job_tags(
    settings: RunSettings,
    items: Sequence[Item],
    *,
    dataset_hash: str,
    git_commit: str | None,
    sweep_id: str,
    digests: DatasetDigests | None = None,
) -> dict[str, str]:
    benchmarks = sorted({item.benchmark for item in items})
    record = flatten(settings.record())
    tags = {
        ROLE_TAG: JOB_ROLE,
        DATASET_TAG: "+".join(benchmarks) or settings.dataset.name,
        METRIC_NAME_TAG: items[0].metric if items else "",
        **{tag: str(record[key]) for tag, key in SETTING_TAGS.items()},
        CONFIG_HASH_TAG: settings.config_hash(),
        DATASET_HASH_TAG: dataset_hash,
        GIT_COMMIT_TAG: git_commit or "unknown",
        SWEEP_ID_TAG: sweep_id,
        STATUS_TAG: "running",
    }
    if digests is not None:
        tags[DATASET_DIGEST_TAG] = digests.digest
    return tags


def summary_metrics(summary: Summary) -> dict[str, float]:
    """summary.json's metrics, under the names its fields declare (giant.record.logged; values copied,
    never recomputed); the by-step lists are `summary_steps`."""
    return {metric.name: metric.value for metric in _logged(summary) if metric.step is None}


def _logged(summary: Summary) -> list[Logged]:
    """What the summary's declarations log. A run halted by a setup failure logs no score and no steps,
    so it never becomes a table cell (giant.tracking.tables reads metric_boot_mean): only what happened."""
    halted = bool(summary.setup_failure)
    return [m for m in logged_values(summary) if not (halted and (m.score or m.step is not None))]


DATASET_ATTEMPTS = 4  # linking the questions' dataset, when another job inserted it at the same moment


class JobRun:
    """The MLflow run of one job: created (or reattached on resume) before any item starts, so the UI
    shows it running; finished with the summary's metrics and the job's files."""

    def __init__(self, client: MlflowClient, run_id: str, settings: RunSettings) -> None:
        self.client = client
        self.run_id = run_id
        self.settings = settings
        self.secrets = secret_values()
        self.abandoned = False  # the server stopped answering at the job's end: no more calls to it

    @classmethod
    def start(
        cls,
        settings: RunSettings,
        *,
        tags: dict[str, str],
        sweep: SweepInfo | None,
        resume_run_id: str | None = None,
    ) -> JobRun:
        """Params are the settings' record (the same data as resolved_config.json); `resume_run_id`
        the run of an earlier attempt with the same run key, reattached if it did not finish."""
        client, experiment_id = open_experiment(settings.tracking)
        run_id = _reattachable(client, resume_run_id)
        if run_id is not None:
            client.update_run(run_id, status="RUNNING")
        else:
            start_tags = dict(tags)
            if sweep is not None and sweep.tracking_uri == settings.tracking.uri:
                start_tags[PARENT_TAG] = sweep.parent_run_id
            name = run_name(settings, tags.get(DATASET_TAG, settings.dataset.name))
            run_id = client.create_run(experiment_id, run_name=name, tags=start_tags).info.run_id
        job = cls(client, run_id, settings)
        job.set_tags(tags)
        params = to_params(
            settings.record(), secrets=job.secrets, max_length=settings.tracking.max_param_length
        )
        try:
            job.log_params(params)
        except MlflowException as exc:  # a reattached run whose config text changed (e.g. a path)
            log.warning("MLflow: params of run %s kept from its first attempt (%s)", run_id, str(exc)[:120])
        return job

    def log_dataset(self, digests: DatasetDigests) -> None:
        """The job's questions as an MLflow input dataset: the file's name (or the published dataset's)
        and the digest of what it holds (giant.data.digest), so the UI shows which version a run scored."""
        from mlflow.data.dataset_source_registry import resolve_dataset_source
        from mlflow.data.meta_dataset import MetaDataset
        from mlflow.entities import DatasetInput, InputTag
        from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

        hub = "hf://datasets/"
        where = digests.location
        if where.startswith(hub):
            where = f"https://huggingface.co/datasets/{where.removeprefix(hub)}"
        with warnings.catch_warnings():  # a local path fits two registered local sources: either is right
            warnings.simplefilter("ignore", UserWarning)
            source = resolve_dataset_source(where)
        dataset = MetaDataset(source, name=digests.name, digest=digests.digest)  # type: ignore[abstract]
        context = InputTag(MLFLOW_DATASET_CONTEXT, DATASET_CONTEXT)
        inputs = [DatasetInput(dataset._to_mlflow_entity(), tags=[context])]
        for attempt in range(DATASET_ATTEMPTS):
            try:
                self.client.log_inputs(self.run_id, inputs)
                return
            except MlflowException as exc:
                # The server looks the dataset up, then inserts it: jobs of one sweep starting together
                # can both miss it, and the later insert fails on the unique key. The row exists now,
                # so the next attempt finds and links it.
                if attempt + 1 == DATASET_ATTEMPTS or "unique" not in str(exc).lower():
                    raise
                time.sleep(0.2 * (attempt + 1))

    def set_tags(self, tags: dict[str, str]) -> None:
        now = [RunTag(key, redact(value, self.secrets)) for key, value in tags.items()]
        self.client.log_batch(self.run_id, tags=now)

    def log_params(self, params: dict[str, str]) -> None:
        # MlflowClient.log_batch splits into the store's per-request limits itself
        self.client.log_batch(self.run_id, params=[Param(key, value) for key, value in params.items()])

    def log_summary(self, summary: Summary) -> None:
        now = get_current_time_millis()
        metrics = [Metric(m.name, m.value, now, m.step or 0) for m in _logged(summary)]
        self.client.log_batch(self.run_id, metrics=metrics)
        status = "stopped" if summary.setup_failure else "complete" if summary.complete else "incomplete"
        tags = {STATUS_TAG: status, DATASET_TAG: summary.benchmark, METRIC_NAME_TAG: summary.metric_name}
        if not summary.complete:
            tags[INCOMPLETE_REASON_TAG] = summary.incomplete_reason[:500]
        self.set_tags(tags)

    def log_artifacts(self, files: dict[str, Path], folders: dict[str, Path]) -> None:
        """`files`: artifact path -> file; `folders`: artifact dir -> folder. A file that holds an
        environment secret is uploaded redacted (binary files are left out) and a warning names it.

        A local artifact store (a folder, as beside a sqlite store) is written directly, and its
        images are hard links to the job folder's (giant.storage): the run's artifacts then cost the
        text files only. Any other store gets an upload of a staged copy."""
        local = self._local_artifact_dir()
        with tempfile.TemporaryDirectory(prefix="giant-artifacts-") as tmp:
            staging = local if local is not None else Path(tmp)
            for name, path in files.items():
                if path.is_file():
                    self._copy_clean(path, staging / name)
            for name, folder in folders.items():
                if folder.is_dir():
                    self._copy_tree_clean(folder, staging / name)
            if local is None and any(staging.iterdir()):
                self.client.log_artifacts(self.run_id, str(staging))

    def _local_artifact_dir(self) -> Path | None:
        """The run's artifact folder when its store is a local folder, else None (told by the URI
        alone: building another store's client may need its SDK, e.g. boto3 for s3)."""
        uri = self.client.get_run(self.run_id).info.artifact_uri
        if urllib.parse.urlsplit(uri).scheme not in ("", "file"):
            return None
        return Path(local_file_uri_to_path(uri))

    def _copy_clean(self, source: Path, target: Path) -> None:
        """`target` holds `source` (replaced, never written through: it may be a link), redacted if
        it holds a secret; `source` is read once."""
        target.parent.mkdir(parents=True, exist_ok=True)
        data = source.read_bytes()
        if not contains_secret(data, self.secrets):
            if is_stored_image(source):
                link_or_copy(source, target)
            else:
                target.unlink(missing_ok=True)
                target.write_bytes(data)
            return
        log.warning("MLflow: %s holds an environment secret; uploading it redacted", source)
        target.unlink(missing_ok=True)
        with suppress(UnicodeDecodeError):  # a binary file with a secret inside: left out, not leaked
            target.write_text(scrub(data.decode("utf-8"), self.secrets), encoding="utf-8")

    def _copy_tree_clean(self, folder: Path, target: Path) -> None:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                self._copy_clean(path, target / path.relative_to(folder))

    def finish(self, status: str = "FINISHED") -> None:
        self.client.set_terminated(self.run_id, status=status)

    def interrupted(self, reason: str) -> None:
        if self.abandoned:  # left RUNNING: the rerun reattaches it
            return
        self.set_tags({STATUS_TAG: "interrupted", INTERRUPTION_TAG: reason})
        self.finish("KILLED")

    def fail(self, reason: str) -> None:
        if self.abandoned:
            return
        self.set_tags({STATUS_TAG: "failed", FAILURE_TAG: reason[:500]})
        self.finish("FAILED")


def _reattachable(client: MlflowClient, run_id: str | None) -> str | None:
    """The earlier run of the same run key, if it exists and did not finish (RUNNING after a hard kill,
    KILLED after an interruption or a requeue, FAILED)."""
    if not run_id:
        return None
    try:
        run = client.get_run(run_id)
    except MlflowException:
        return None
    if run.info.lifecycle_stage != "active" or run.info.status == "FINISHED":
        return None
    return run_id


@contextmanager
def tracked(job: JobRun | None) -> Iterator[JobRun | None]:
    """Marks the run FAILED (with the reason) when the job raises, KILLED (status=interrupted) on Ctrl-C
    or a signal's clean stop: a KILLED run is reattached and set RUNNING again when the job resumes."""
    from giant.interrupt import Interrupted

    try:
        yield job
    except KeyboardInterrupt:
        if job is not None:
            job.interrupted("Ctrl-C")
        raise
    except Interrupted as stop:
        if job is not None:
            job.interrupted(stop.stop.reason)
        raise
    except BaseException as exc:
        if job is not None:
            job.fail(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        raise
