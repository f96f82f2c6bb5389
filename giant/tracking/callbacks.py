"""The Hydra callback that gives every sweep (`-m`) one MLflow parent run.

`on_multirun_start` runs once, in the launching process, before any job: it creates the store, the
experiment and the parent run (so parallel jobs never race to create the sqlite schema), and writes
the parent's id into the sweep directory, where each job (any launcher, any process or node) finds
it. `on_multirun_end` closes the parent with the jobs' aggregate status.
"""

from __future__ import annotations

import atexit
import logging
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra import compose
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from giant.config import RunSettings, TrackingSettings
from giant.errors import ConfigError, exit_with
from giant.tracking.secrets import scrub, secret_values

if TYPE_CHECKING:
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient

log = logging.getLogger(__name__)

SWEEP_TABLE = "sweep_runs.csv"


def tracking_settings(config: DictConfig) -> TrackingSettings:
    data = OmegaConf.to_container(config.tracking, resolve=True)
    return TrackingSettings.model_validate(data)


def sweep_jobs(config: DictConfig) -> list[list[str]]:
    """The override list of every job Hydra's basic sweeper will launch ([] for other sweepers)."""
    if not str(config.hydra.sweeper.get("_target_", "")).endswith("BasicSweeper"):
        return []
    params = config.hydra.sweeper.get("params") or {}
    arguments = [f"{key}={value}" for key, value in params.items()] + list(config.hydra.overrides.task)
    parsed = OverridesParser.create().parse_overrides(arguments)
    return [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


def validate_sweep(config: DictConfig) -> None:
    """Every job's settings (and API key) checked before the first job starts: a bad value in the
    last sweep point must not surface hours into a sweep."""
    from giant.llm.factory import check_credentials

    for overrides in sweep_jobs(config):
        try:
            settings = RunSettings.from_config(compose(config.hydra.job.config_name, overrides=overrides))
        except ConfigError as err:
            raise ConfigError(f"{err} (sweep job: {' '.join(overrides)})") from None
        if not settings.run.dry_run:
            check_credentials(settings.provider)


class MlflowSweepCallback(Callback):
    # MLflow is imported inside the hooks: Hydra builds callbacks for every run, and a config error
    # should be reported in a second, not after MLflow's multi-second import.
    def __init__(self) -> None:
        self._open: tuple[TrackingSettings, str] | None = None  # the parent run until the sweep ends

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from giant.tracking.mlflow_logger import ROLE_TAG, SweepInfo, open_experiment

        try:
            validate_sweep(config)
            tracking = tracking_settings(config)
            opened = open_experiment(tracking) if tracking.enabled else None
        except ConfigError as err:  # one line and exit 2, as for a single run (scripts/run_eval.py)
            exit_with("run_eval", str(err))
        if opened is None:
            return
        client, experiment_id = opened
        overrides = " ".join(config.hydra.overrides.task)
        secrets = secret_values()
        sweep_dir = Path(config.hydra.sweep.dir)
        run = client.create_run(
            experiment_id,
            run_name=f"sweep {sweep_dir.name}",
            tags={ROLE_TAG: "sweep", "status": "running", "overrides": scrub(overrides, secrets)[:5000]},
        )
        run_id = run.info.run_id
        client.set_tag(run_id, "sweep_id", run_id)
        client.log_param(run_id, "sweep_dir", str(sweep_dir))
        SweepInfo(tracking_uri=tracking.uri, experiment_id=experiment_id, parent_run_id=run_id).write(
            sweep_dir
        )
        log.info("MLflow sweep run %s (experiment %s at %s)", run_id, tracking.experiment, tracking.uri)
        self._open = (tracking, run_id)
        # A failing job aborts Hydra's sweep without on_multirun_end: close the parent on the way out.
        atexit.register(self._close_abandoned)

    def _close_abandoned(self) -> None:
        if self._open is None:
            return
        from giant.interrupt import stopped_by
        from giant.tracking.mlflow_logger import open_experiment

        tracking, run_id = self._open
        self._open = None
        client, _ = open_experiment(tracking)
        reason = stopped_by()
        if reason:  # a job of this process stopped cleanly on a signal or Ctrl-C: rerunning resumes
            client.set_tag(run_id, "status", "interrupted")
            client.set_tag(run_id, "interruption", reason)
            client.set_terminated(run_id, status="KILLED")
            return
        client.set_tag(run_id, "status", "failed")
        client.set_tag(run_id, "failure", "the sweep stopped before all jobs finished (a job failed)")
        client.set_terminated(run_id, status="FAILED")

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from giant.interrupt import stopped_by
        from giant.tracking.mlflow_logger import PARENT_TAG, SweepInfo, open_experiment

        sweep = SweepInfo.read(Path(config.hydra.sweep.dir))
        if sweep is None:
            return
        self._open = None
        tracking = tracking_settings(config)
        client, _ = open_experiment(tracking)
        children = client.search_runs(
            [sweep.experiment_id],
            filter_string=f"tags.`{PARENT_TAG}` = '{sweep.parent_run_id}'",
            max_results=5000,
        )
        statuses = [child.info.status for child in children]
        failed = sum(status != "FINISHED" for status in statuses)
        incomplete = sum(child.data.tags.get("status") == "incomplete" for child in children)
        for key, value in {"n_jobs": len(children), "n_failed": failed, "n_incomplete": incomplete}.items():
            client.log_metric(sweep.parent_run_id, key, value)
        overall = "failed" if failed or not children else ("incomplete" if incomplete else "complete")
        interruption = stopped_by()  # this process got SIGTERM and its jobs (joblib) stopped cleanly
        if interruption:
            overall = "interrupted"
            client.set_tag(sweep.parent_run_id, "interruption", interruption)
        client.set_tag(sweep.parent_run_id, "status", overall)
        self._log_table(client, sweep.parent_run_id, children)
        ended = {"failed": "FAILED", "interrupted": "KILLED"}.get(overall, "FINISHED")
        client.set_terminated(sweep.parent_run_id, status=ended)

    @staticmethod
    def _log_table(client: MlflowClient, parent_run_id: str, children: list[Run]) -> None:
        """The sweep at a glance: one row per job with its tags and headline metrics."""
        import pandas as pd

        rows = [
            {
                "run_id": child.info.run_id,
                "run_name": child.info.run_name,
                "mlflow_status": child.info.status,
                **{key: child.data.tags.get(key) for key in ("dataset", "agent_mode", "T", "S", "status")},
                **{
                    key: child.data.metrics.get(key)
                    for key in ("metric", "metric_boot_std", "n_items", "cost_usd")
                },
            }
            for child in children
        ]
        with tempfile.TemporaryDirectory(prefix="giant-sweep-") as tmp:
            path = Path(tmp) / SWEEP_TABLE
            pd.DataFrame(rows).to_csv(path, index=False)
            client.log_artifact(parent_run_id, str(path))
