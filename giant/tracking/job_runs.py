"""A job's MLflow run, as the job record reads it (giant.record.read.RunStore): looked up by the folder it
logged or by its id, its artifacts downloaded. The store is opened when first asked, so reading a job
folder with tracking on opens it only to find the folder's run."""

from __future__ import annotations

from pathlib import Path

from mlflow.entities import Run
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from giant.config import TrackingSettings
from giant.errors import ConfigError
from giant.record.read import FIX, LoggedRun
from giant.tracking.mlflow_logger import open_experiment
from giant.tracking.names import OUTPUT_DIR_TAG, SOURCE_START_TAG, tag_filter


class MlflowRuns:
    """The job runs of the store and experiment `tracking` names."""

    def __init__(self, tracking: TrackingSettings) -> None:
        self.tracking = tracking
        self.uri = tracking.uri
        self._opened: tuple[MlflowClient, str] | None = None

    def _open(self) -> tuple[MlflowClient, str]:
        if self._opened is None:
            self._opened = open_experiment(self.tracking)
        return self._opened

    def logged(self, folder: Path) -> LoggedRun | None:
        client, experiment_id = self._open()
        runs = client.search_runs(
            [experiment_id],
            tag_filter(OUTPUT_DIR_TAG, str(folder.resolve())),
            order_by=["attributes.start_time DESC"],
            max_results=1,
        )
        return _logged(runs[0]) if runs else None

    def run(self, run_id: str) -> LoggedRun:
        client, _ = self._open()
        try:
            return _logged(client.get_run(run_id))
        except MlflowException:
            raise ConfigError(f"source={run_id}: no such MLflow run at {self.uri}; {FIX}") from None

    def download(self, run_id: str, artifact: str, folder: Path) -> Path | None:
        client, _ = self._open()
        try:
            return Path(client.download_artifacts(run_id, artifact, str(folder)))
        except (MlflowException, OSError):
            return None


def _logged(run: Run) -> LoggedRun:
    tags = dict(run.data.tags)
    return LoggedRun(run.info.run_id, tags, int(tags.get(SOURCE_START_TAG) or run.info.start_time or 0))
