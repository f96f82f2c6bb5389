"""The Hydra callback that checks a run before it starts and gives every sweep (`-m`) one MLflow parent run.

`on_run_start` and `on_multirun_start` run before Hydra creates the job or sweep folder: a folder that
cannot be written is one line and exit 2 there, like a bad value. `on_multirun_start` runs once, in
the launching process, before any job: it validates every job's settings (and a SLURM launcher's
requeue signal against its time limit), creates the store, the experiment and the parent run (so
parallel jobs never race to create the sqlite schema), and writes the parent's id into the sweep
directory, where each job (any launcher, any process or node) finds it. `on_multirun_end`, also in
the launching process, reads the jobs' outcomes (giant.cli.outcomes), closes the parent with the jobs'
aggregate status, lists the jobs that did not complete (one line per cause) and exits with the highest of
their codes.
"""

from __future__ import annotations

import atexit
import logging
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra import compose
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from giant.cli.outcomes import JobOutcome, clear_outcomes, exit_code, failure_lines, read_outcomes
from giant.cli.sweep import sweep_jobs, swept_settings
from giant.config import PathSettings, RunSettings, TrackingSettings
from giant.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, ConfigError, exit_with
from giant.secrets import redact, secret_values
from giant.tracking.names import (
    AGENT_MODE_TAG,
    BOOT_STD_METRIC,
    COST_METRIC,
    CROP_SIZE_TAG,
    DATASET_TAG,
    FAILURE_TAG,
    INTERRUPTION_TAG,
    MAIN_METRIC,
    MAX_STEPS_TAG,
    N_FAILED_METRIC,
    N_INCOMPLETE_METRIC,
    N_ITEMS_METRIC,
    N_JOBS_METRIC,
    OUTPUT_DIR_TAG,
    OVERRIDES_TAG,
    PARENT_TAG,
    ROLE_TAG,
    STATUS_TAG,
    SWEEP_ID_TAG,
    SWEEP_ROLE,
    tag_filter,
)
from giant.tracking.safe_cells import csv_cell
from giant.tracking.view import param_number, store_view

if TYPE_CHECKING:
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient

log = logging.getLogger(__name__)

SWEEP_TABLE = "sweep_runs.csv"
# a sweep's status: its worst job's
STATUS_ORDER = ["complete", "untracked", "incomplete", "failed", "interrupted"]
STOP_CODES = {"Ctrl-C": EXIT_INTERRUPTED, "SIGTERM": EXIT_TERMINATED}  # a stop's reason and exit code
# The columns of SWEEP_TABLE read from each job's run, beside its outcome
TABLE_TAGS = (DATASET_TAG, AGENT_MODE_TAG, MAX_STEPS_TAG, CROP_SIZE_TAG, STATUS_TAG)
TABLE_METRICS = (MAIN_METRIC, BOOT_STD_METRIC, N_ITEMS_METRIC, COST_METRIC)


def tracking_settings(config: DictConfig) -> TrackingSettings:
    data = OmegaConf.to_container(config.tracking, resolve=True)
    return TrackingSettings.model_validate(data)


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


def check_launcher(config: DictConfig) -> None:
    """A SLURM launcher whose requeue signal (`signal_delay_s` before the time limit) would come at or
    before the job's start: every job would stop at once and spend its requeues without running an
    item. Checked before anything is submitted."""
    launcher = config.hydra.launcher
    delay, limit = launcher.get("signal_delay_s"), launcher.get("timeout_min")
    if delay is None or limit is None or delay < limit * 60:
        return
    raise ConfigError(
        f"hydra.launcher.signal_delay_s={delay}: the requeue signal is sent that many seconds before the "
        f"job's time limit (hydra.launcher.timeout_min={limit}, {limit * 60} s), so it would come at once "
        "and the job would spend its requeues without running; set it well below the limit, or raise "
        "hydra.launcher.timeout_min"
    )


class MlflowSweepCallback(Callback):
    # MLflow is imported inside the hooks: Hydra builds callbacks for every run, and a config error
    # should be reported in a second, not after MLflow's multi-second import.
    def __init__(self) -> None:
        self._open: tuple[TrackingSettings, str] | None = None  # the parent run until the sweep ends

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        """A single run's folders, tried before Hydra creates its job folder (a traceback otherwise)."""
        try:
            PathSettings.from_config(config).check_writable(Path(config.hydra.run.dir), sweep=False)
        except ConfigError as err:  # the callback also serves fetch_slides (conf/fetch.yaml)
            exit_with(str(config.hydra.job.name), str(err))

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from giant.tracking.mlflow_logger import SweepInfo, open_experiment

        sweep_dir = Path(config.hydra.sweep.dir)
        try:
            check_launcher(config)
            validate_sweep(config)
            PathSettings.from_config(config).check_writable(sweep_dir, sweep=True)
            tracking = tracking_settings(config)
            # A dry-run sweep leaves no trace in MLflow: its reports stay in the job folders
            opened = open_experiment(tracking) if tracking.enabled and not config.get("dry_run") else None
        except ConfigError as err:  # one line and exit 2, as for a single run (scripts/run_eval.py)
            exit_with("run_eval", str(err))
        clear_outcomes(sweep_dir)
        if opened is None:
            return
        client, experiment_id = opened
        overrides = " ".join(config.hydra.overrides.task)
        secrets = secret_values()
        run = client.create_run(
            experiment_id,
            run_name=f"sweep {sweep_dir.name}",
            tags={
                ROLE_TAG: SWEEP_ROLE,
                STATUS_TAG: "running",
                OVERRIDES_TAG: redact(overrides, secrets)[:5000],
            },
        )
        run_id = run.info.run_id
        self._open = (tracking, run_id)
        # A failing job aborts Hydra's sweep without on_multirun_end: close the parent on the way out.
        atexit.register(self._close_abandoned)
        client.set_tag(run_id, SWEEP_ID_TAG, run_id)
        client.log_param(run_id, "sweep_dir", str(sweep_dir))
        # The sweep's view in the UI from the command line; rewritten from the jobs' runs at the end
        swept = swept_settings(config)
        numeric = [key for key, seen in swept.items() if all(param_number(v) is not None for v in seen)]
        store_view(client, experiment_id, run_id, list(swept), numeric)
        SweepInfo(tracking_uri=tracking.uri, experiment_id=experiment_id, parent_run_id=run_id).write(
            sweep_dir
        )
        log.info("MLflow sweep run %s (experiment %s at %s)", run_id, tracking.experiment, tracking.uri)

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
            client.set_tag(run_id, STATUS_TAG, "interrupted")
            client.set_tag(run_id, INTERRUPTION_TAG, reason)
            client.set_terminated(run_id, status="KILLED")
            return
        client.set_tag(run_id, STATUS_TAG, "failed")
        client.set_tag(run_id, FAILURE_TAG, "the sweep stopped before all jobs finished (a job failed)")
        client.set_terminated(run_id, status="FAILED")

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Closes the parent run, then makes the script's exit code the highest of the jobs' (with one
        line per cause naming the jobs that did not complete): runs with tracking on or off."""
        from giant.interrupt import stopped_by

        outcomes = read_outcomes(Path(config.hydra.sweep.dir))
        if config.get("dry_run"):  # every cell priced: the sweep's table of them
            from giant.eval.dryrun import sweep_lines

            print("\n".join(sweep_lines([Path(o.output_dir) for o in sorted(outcomes, key=lambda o: o.job)])))
        try:
            result = self._close_parent(config, outcomes)
        except Exception as exc:  # the exit code below must not depend on the store being reachable
            log.warning("MLflow: the sweep's parent run was not closed (%s)", exc)
        else:
            if result:
                print("\n".join(["", *result]))
        for line in failure_lines(outcomes):
            print(f"run_eval: {line}", file=sys.stderr)
        reason = stopped_by()  # this process got SIGTERM and its jobs (joblib) stopped cleanly
        code = max(exit_code(outcomes), STOP_CODES.get(reason, EXIT_TERMINATED) if reason else EXIT_OK)
        if code != EXIT_OK:
            sys.exit(code)

    def _close_parent(self, config: DictConfig, outcomes: list[JobOutcome]) -> list[str]:
        """The parent's status counts every job: its child run, and its outcome, which is all there is
        of a job that stopped before it opened a run (a config error). Returns the sweep's result to
        print (giant.tracking.sweep_result), logged on the parent first."""
        from giant.interrupt import stopped_by
        from giant.tracking.mlflow_logger import SweepInfo, open_experiment
        from giant.tracking.sweep_result import finish_sweep

        sweep = SweepInfo.read(Path(config.hydra.sweep.dir))
        if sweep is None:
            return []
        self._open = None
        tracking = tracking_settings(config)
        client, _ = open_experiment(tracking)
        children = client.search_runs(
            [sweep.experiment_id],
            filter_string=tag_filter(PARENT_TAG, sweep.parent_run_id),
            max_results=5000,
        )
        jobs = jobs_status(children, outcomes)
        for key, value in {
            N_JOBS_METRIC: len(jobs),
            N_FAILED_METRIC: sum(status == "failed" for status in jobs.values()),
            N_INCOMPLETE_METRIC: sum(status == "incomplete" for status in jobs.values()),
        }.items():
            client.log_metric(sweep.parent_run_id, key, value)
        overall = sweep_status(list(jobs.values()))
        interruption = stopped_by() or next(
            (reason for reason, code in STOP_CODES.items() for o in outcomes if o.code == code), None
        )
        if interruption:
            overall = "interrupted"
            client.set_tag(sweep.parent_run_id, INTERRUPTION_TAG, interruption)
        client.set_tag(sweep.parent_run_id, STATUS_TAG, overall)
        self._log_table(client, sweep.parent_run_id, children, outcomes)
        try:
            result = finish_sweep(
                client,
                tracking.uri,
                tracking.experiment,
                sweep.experiment_id,
                sweep.parent_run_id,
                Path(config.hydra.sweep.dir),
            )
        finally:
            ended = {"failed": "FAILED", "interrupted": "KILLED"}.get(overall, "FINISHED")
            client.set_terminated(sweep.parent_run_id, status=ended)
        return result

    @staticmethod
    def _log_table(
        client: MlflowClient, parent_run_id: str, children: list[Run], outcomes: list[JobOutcome]
    ) -> None:
        """The sweep at a glance: one row per job with its tags, headline metrics and exit code; a job
        that stopped before it opened a run has a row too."""
        import pandas as pd

        by_dir = {outcome.output_dir: outcome for outcome in outcomes}
        rows = [
            {
                **_outcome_columns(by_dir.pop(child.data.tags.get(OUTPUT_DIR_TAG, ""), None)),
                "run_id": child.info.run_id,
                "run_name": child.info.run_name,
                "mlflow_status": child.info.status,
                **{key: child.data.tags.get(key) for key in TABLE_TAGS},
                **{key: child.data.metrics.get(key) for key in TABLE_METRICS},
            }
            for child in children
        ]
        rows += [_outcome_columns(outcome) for outcome in by_dir.values()]
        rows.sort(key=lambda row: (row["job"] is None, row["job"] or 0))  # in job order
        with tempfile.TemporaryDirectory(prefix="giant-sweep-") as tmp:
            path = Path(tmp) / SWEEP_TABLE
            pd.DataFrame(rows).map(csv_cell).to_csv(path, index=False)  # text, never a formula
            client.log_artifact(parent_run_id, str(path))


def _outcome_columns(outcome: JobOutcome | None) -> dict[str, object]:
    if outcome is None:  # a run logged without the CLI (tests, notebooks)
        return {"job": None, "exit_code": None, "outcome": None}
    return {"job": outcome.job, "exit_code": outcome.code, "outcome": outcome.message}


def child_status(child: Run) -> str:
    """A child run's share of the sweep's status."""
    if child.info.status == "KILLED":
        return "interrupted"
    if child.info.status != "FINISHED":
        return "failed"
    return "incomplete" if child.data.tags.get(STATUS_TAG) == "incomplete" else "complete"


def jobs_status(children: list[Run], outcomes: list[JobOutcome]) -> dict[str, str]:
    """Each job's status by its output folder: the worse of its child run's and its outcome's (a job
    without a run, stopped by a config error, has only its outcome). An untracked job's outcome wins:
    its run is RUNNING only because the server never took the job's end."""
    jobs = {child.data.tags.get(OUTPUT_DIR_TAG, child.info.run_id): child_status(child) for child in children}
    for outcome in outcomes:
        if outcome.status == "untracked":
            jobs[outcome.output_dir] = outcome.status
            continue
        jobs[outcome.output_dir] = sweep_status([jobs.get(outcome.output_dir, "complete"), outcome.status])
    return jobs


def sweep_status(statuses: list[str]) -> str:
    """The worst of the jobs' statuses; a sweep without any job failed."""
    return max(statuses, key=STATUS_ORDER.index) if statuses else "failed"
