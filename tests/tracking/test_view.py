"""The sweep's saved view (giant.tracking.view) as MLflow's UI reads it: an experiment tag
`mlflow.sharedViewState.<sweep id>` holding the runs page's state as JSON, from the jobs' runs in a
real store. The browser side is tests/tracking/test_sweep_view_browser.py."""

from __future__ import annotations

import json

from mlflow.tracking import MlflowClient

from giant.tracking.names import (
    DATASET_TAG,
    JOB_ROLE,
    ROLE_TAG,
    SHARED_VIEW_PREFIX,
    STATUS_TAG,
    SWEEP_ID_TAG,
    SWEEP_ROLE,
)
from giant.tracking.store import runs_table_links
from giant.tracking.sweep_result import sweep_plot
from giant.tracking.view import store_view_from_runs, view_address


def _sweep(client: MlflowClient, experiment: str) -> tuple[str, list[str]]:
    sweep = client.create_run(experiment, tags={ROLE_TAG: SWEEP_ROLE}).info.run_id
    jobs = []
    for task in ("tcga", "panda"):
        for steps in ("5", "10"):
            run = client.create_run(
                experiment,
                # every job run has a status from its start (giant.tracking.mlflow_logger.run_tags)
                tags={ROLE_TAG: JOB_ROLE, SWEEP_ID_TAG: sweep, DATASET_TAG: task, STATUS_TAG: "complete"},
            )
            for key, value in {
                "agent.max_steps": steps,
                "dataset.benchmark": task,
                "agent.crop_size": "1000",  # the same in every job: not swept
                "paths.output_dir": f"/out/{task}-{steps}",  # differs, but is where a job wrote
            }.items():
                client.log_param(run.info.run_id, key, value)
            client.set_terminated(run.info.run_id, status="FINISHED")
            jobs.append(run.info.run_id)
    return sweep, jobs


def test_the_view_lists_the_jobs_with_the_ablation_s_columns(mlflow_store: tuple[str, str]) -> None:
    uri, experiment = mlflow_store
    client = MlflowClient(uri)
    sweep, _ = _sweep(client, experiment)
    other = client.create_run(experiment, tags={ROLE_TAG: "report", SWEEP_ID_TAG: sweep})  # not a job
    assert store_view_from_runs(client, experiment, sweep) == ["agent.max_steps", "dataset.benchmark"]
    state = json.loads(client.get_experiment(experiment).tags[f"{SHARED_VIEW_PREFIX}{sweep}"])
    # the filter selects the sweep's jobs only
    listed = client.search_runs([experiment], state["searchFilter"])
    assert len(listed) == 4 and other.info.run_id not in {run.info.run_id for run in listed}
    columns = state["selectedColumns"]
    # the metric and its interval first: in view beside MLflow's Assistant panel at 1366 px (issue 42)
    assert columns[:3] == ["metrics.`metric`", "metrics.`metric_ci_low`", "metrics.`metric_ci_high`"]
    assert columns[3:5] == ["params.`agent.max_steps`", "params.`dataset.benchmark`"]
    assert {"metrics.`nav_hit_rate`", "metrics.`nav_finest_mpp`", "metrics.`nav_coverage`"} <= set(columns)
    for key in ("metric", "metric_ci_low", "metric_ci_high", "cost_usd", "calls_paid", "steps_mean"):
        assert f"metrics.`{key}`" in columns
    assert "tags.`dataset`" in columns
    # one chart per numeric swept setting: the metric against agent.max_steps, not against the task
    charts = state["compareRunCharts"]
    assert [(c["type"], c["xaxis"], c["yaxis"]["key"]) for c in charts] == [
        ("SCATTER", {"key": "agent.max_steps", "type": "PARAM"}, "metric")
    ]
    assert {c["metricSectionId"] for c in charts} == {s["uuid"] for s in state["compareRunSections"]}


def test_a_job_with_unmeasured_item_runs_is_no_row_and_no_point_of_the_view(
    mlflow_store: tuple[str, str], tmp_path
) -> None:
    """Its metric counts the unmeasured item-runs as wrong answers: not a score (issue 39). Complete and
    still running jobs stay listed, under the metric's unchanged name."""
    uri, experiment = mlflow_store
    client = MlflowClient(uri)
    sweep, jobs = _sweep(client, experiment)
    for run_id in jobs:
        client.log_metric(run_id, "metric", 0.5)
    client.set_tag(jobs[0], STATUS_TAG, "incomplete")
    client.set_tag(jobs[1], STATUS_TAG, "running")
    swept = store_view_from_runs(client, experiment, sweep)
    state = json.loads(client.get_experiment(experiment).tags[f"{SHARED_VIEW_PREFIX}{sweep}"])
    listed = {run.info.run_id for run in client.search_runs([experiment], state["searchFilter"])}
    assert listed == set(jobs[1:])
    assert "metrics.`metric`" in state["selectedColumns"]
    runs = [client.get_run(run_id) for run_id in jobs]
    plot = sweep_plot(runs, swept, tmp_path / "plot.png")
    assert plot is not None and plot.is_file()  # the other jobs are drawn
    client.set_tag(jobs[2], STATUS_TAG, "incomplete")
    client.set_tag(jobs[3], STATUS_TAG, "incomplete")
    client.set_tag(jobs[1], STATUS_TAG, "incomplete")
    # every job incomplete: nothing to draw (an incomplete job's metric was plotted before)
    assert sweep_plot([client.get_run(run_id) for run_id in jobs], swept, tmp_path / "none.png") is None


def test_make_ui_prints_the_newest_sweep_s_address(mlflow_store: tuple[str, str]) -> None:
    uri, experiment = mlflow_store
    client = MlflowClient(uri)
    older, _ = _sweep(client, experiment)
    store_view_from_runs(client, experiment, older)
    newer, _ = _sweep(client, experiment)
    store_view_from_runs(client, experiment, newer)
    lines = runs_table_links(client, "http://127.0.0.1:5000")
    address = view_address("http://127.0.0.1:5000", experiment, newer)
    assert f"newest sweep of giant, its jobs side by side: {address}" in lines
    assert not any(older in line for line in lines)


def test_make_ui_passes_over_a_sweep_without_finished_jobs(mlflow_store: tuple[str, str]) -> None:
    """A newer sweep whose jobs never finished (refused, or an older giant's dry run) would open an
    empty view: make ui names the newest sweep that has finished job runs."""
    uri, experiment = mlflow_store
    client = MlflowClient(uri)
    real, _ = _sweep(client, experiment)
    store_view_from_runs(client, experiment, real)
    empty = client.create_run(experiment, tags={ROLE_TAG: SWEEP_ROLE}).info.run_id
    failed = client.create_run(experiment, tags={ROLE_TAG: JOB_ROLE, SWEEP_ID_TAG: empty}).info.run_id
    client.set_terminated(failed, status="FAILED")
    client.set_experiment_tag(experiment, f"{SHARED_VIEW_PREFIX}{empty}", "{}")
    lines = runs_table_links(client, "http://127.0.0.1:5000")
    address = view_address("http://127.0.0.1:5000", experiment, real)
    assert f"newest sweep of giant, its jobs side by side: {address}" in lines
    assert not any(empty in line for line in lines)
