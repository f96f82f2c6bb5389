"""The MLflow UI's view of a sweep: its job runs, the columns an ablation is read by, and a chart of the
task's metric against each swept setting, opened from one address.

MLflow 3.17's UI restores a saved view from an experiment tag `mlflow.sharedViewState.<key>` when the
runs page's address carries `viewStateShareKey=<key>` (what its "Share" button writes: the JSON of the
page's search facets and UI state). giant writes that tag for every sweep, keyed by the sweep's id, so
`make ui` can print an address that opens on the sweep's jobs instead of a collapsed parent row with
the Dataset, Duration, Source and Models columns. Column keys are the UI's canonical sort keys
(`metrics.\\`name\\``); the chart is a scatter card (x a parameter, y a metric).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from giant.tracking.names import (
    CALLS_PAID_METRIC,
    CI_HIGH_METRIC,
    CI_HIGH_SUFFIX,
    CI_LOW_METRIC,
    CI_LOW_SUFFIX,
    COST_METRIC,
    DATASET_TAG,
    JOB_ROLE,
    MAIN_METRIC,
    METRIC_NAME_TAG,
    NAVIGATION_METRIC_PREFIX,
    ROLE_TAG,
    SHARED_VIEW_PREFIX,
    STATUS_TAG,
    STEPS_MEAN_METRIC,
    SWEEP_ID_TAG,
    SWEEP_ROLE,
    VIEW_SHARE_PARAM,
    tag_filter,
)

if TYPE_CHECKING:
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient

RUNS_TABLE_QUERY = "workflowType=machine_learning"  # MLflow 3.17's UI: the runs table, not GenAI's pages
TABLE_MODE, CHART_MODE = "TABLE", "CHART"  # the runs page's compareRunsMode values
SECTION_ID = "giant-sweep"  # the one chart section the view holds
SECTION = {"uuid": SECTION_ID, "name": "Task metric vs swept settings", "display": True, "isReordered": False}
# Parameters that differ between jobs without being an ablation's setting (where each job wrote)
NOT_SWEPT_PREFIXES = ("paths.", "tracking.", "hydra.")
# The columns every sweep view shows, in order: the metric and its bootstrap interval first (MLflow
# 3.17 opens its Assistant panel beside the table in a fresh browser profile, which leaves a 1366 px
# screen room for a few columns only), then the swept settings, the task and its metric's name, then
# dollars, paid calls, steps and where the model looked (hit rate with its interval, finest µm/px,
# tissue coverage)
SCORE_COLUMNS = (MAIN_METRIC, CI_LOW_METRIC, CI_HIGH_METRIC)
METRIC_COLUMNS = (
    COST_METRIC,
    CALLS_PAID_METRIC,
    STEPS_MEAN_METRIC,
    f"{NAVIGATION_METRIC_PREFIX}hit_rate",
    f"{NAVIGATION_METRIC_PREFIX}hit_rate{CI_LOW_SUFFIX}",
    f"{NAVIGATION_METRIC_PREFIX}hit_rate{CI_HIGH_SUFFIX}",
    f"{NAVIGATION_METRIC_PREFIX}finest_mpp",
    f"{NAVIGATION_METRIC_PREFIX}coverage",
)
TAG_COLUMNS = (DATASET_TAG, METRIC_NAME_TAG)
INCOMPLETE = "incomplete"  # the status tag of a job left short (giant.tracking.mlflow_logger.log_summary)


def column_key(kind: str, name: str) -> str:
    """The UI's canonical key of a column: `metrics.\\`cost_usd\\``, `params.\\`agent.max_steps\\``."""
    return f"{kind}.`{name}`"


def jobs_filter(sweep_id: str) -> str:
    """The search that lists a sweep's job runs (its parent, reports and comparisons left out)."""
    return f"{tag_filter(SWEEP_ID_TAG, sweep_id)} AND {tag_filter(ROLE_TAG, JOB_ROLE)}"


def view_filter(sweep_id: str) -> str:
    """The search of the sweep's view: its job runs but those that ended incomplete (item-runs left
    unmeasured, or a budget stop). Such a job's metric is not a score (its unmeasured item-runs would
    count as wrong answers), so it is neither a row nor a point of the view, while a complete job's
    metric keeps its name; the sweep's end line and `make tables` name the job left out. Running jobs
    stay (the view is written as the sweep starts), and a rerun that measures the rest brings it in."""
    return f"{jobs_filter(sweep_id)} AND tags.`{STATUS_TAG}` != '{INCOMPLETE}'"


def scored(runs: Iterable[Run]) -> list[Run]:
    """The runs of `runs` the view shows (view_filter) that logged the task's metric."""
    return [r for r in runs if r.data.tags.get(STATUS_TAG) != INCOMPLETE and MAIN_METRIC in r.data.metrics]


def swept_params(runs: Iterable[Run]) -> list[str]:
    """The parameters whose value differs between a sweep's job runs: the ablation's settings."""
    values: dict[str, set[str]] = {}
    for run in runs:
        for key, value in run.data.params.items():
            values.setdefault(key, set()).add(value)
    return sorted(k for k, v in values.items() if len(v) > 1 and not k.startswith(NOT_SWEPT_PREFIXES))


def param_number(value: str | None) -> float | None:
    """A parameter's value as a number (None: not a number, or unset)."""
    try:
        return float(value) if value not in (None, "", "None") else None
    except ValueError:
        return None


def numeric_settings(runs: Sequence[Run], swept: Sequence[str]) -> list[str]:
    """The swept settings every job ran with a number (a metric can be drawn against them)."""
    return [key for key in swept if all(param_number(run.data.params.get(key)) is not None for run in runs)]


def _scatter(index: int, param: str) -> dict[str, Any]:
    return {
        "uuid": f"giant-{index}-{param}",
        "type": "SCATTER",
        "runsCountToCompare": 100,
        "metricSectionId": SECTION_ID,
        "deleted": False,
        "isGenerated": False,
        "xaxis": {"key": param, "type": "PARAM"},
        "yaxis": {"key": MAIN_METRIC, "type": "METRIC"},
    }


def view_state(sweep_id: str, swept: Sequence[str], charted: Sequence[str]) -> dict[str, Any]:
    """The runs page's state for one sweep: its jobs, the ablation's columns (`swept`), one chart of
    the metric per numeric setting (`charted`).

    Every field of the page's state is given (the UI takes the saved state as it is, so a field left
    out would be undefined, not its default)."""
    columns = [column_key("metrics", key) for key in SCORE_COLUMNS]
    columns += [column_key("params", key) for key in swept]
    columns += [column_key("tags", key) for key in TAG_COLUMNS]
    columns += [column_key("metrics", key) for key in METRIC_COLUMNS]
    return {
        # search facets
        "searchFilter": view_filter(sweep_id),
        "orderByKey": column_key("params", swept[0]) if swept else "attributes.start_time",
        "orderByAsc": True,
        "startTime": "ALL",
        "lifecycleFilter": "Active",
        "datasetsFilter": [],
        "modelVersionFilter": "All Runs",
        # UI state
        "selectedColumns": columns,
        "columnOrder": columns,  # the ablation's settings first, as the columns are listed
        "columnWidths": {},
        "runsExpanded": {},
        "runsPinned": [],
        "runsHidden": [],
        "runsVisibilityMap": {},
        "runsHiddenMode": "SHOW_ALL",
        "compareRunCharts": [_scatter(i, key) for i, key in enumerate(charted)],
        "compareRunSections": [SECTION],
        "viewMaximized": False,
        "runListHidden": False,
        "isAccordionReordered": False,
        "useGroupedValuesInCharts": True,
        "hideEmptyCharts": True,
        "groupBy": None,
        "groupsExpanded": {},
        "autoRefreshEnabled": True,
        "globalLineChartConfig": {"xAxisKey": "step", "lineSmoothness": 0, "selectedXAxisMetricKey": ""},
    }


def store_view(
    client: MlflowClient, experiment_id: str, sweep_id: str, swept: Sequence[str], charted: Sequence[str]
) -> str:
    """Write the sweep's view on its experiment; returns its share key (the sweep's id)."""
    state = json.dumps(view_state(sweep_id, swept, charted))
    client.set_experiment_tag(experiment_id, f"{SHARED_VIEW_PREFIX}{sweep_id}", state)
    return sweep_id


def store_view_from_runs(client: MlflowClient, experiment_id: str, sweep_id: str) -> list[str]:
    """The view rewritten from the sweep's job runs as they were logged (the settings that really
    differ between them); returns those settings."""
    jobs = client.search_runs([experiment_id], filter_string=jobs_filter(sweep_id), max_results=5000)
    swept = swept_params(jobs)
    store_view(client, experiment_id, sweep_id, swept, numeric_settings(jobs, swept))
    return swept


def view_address(base: str, experiment_id: str, key: str, mode: str = TABLE_MODE) -> str:
    """The UI address that opens a stored view (`mode`: the table, or the charts beside the run list)."""
    query = f"{RUNS_TABLE_QUERY}&{VIEW_SHARE_PARAM}={key}&compareRunsMode={mode}"
    return f"{base.rstrip('/')}/#/experiments/{experiment_id}/runs?{query}"


def latest_sweep_view(client: MlflowClient, experiment_id: str) -> str | None:
    """The share key of the experiment's newest sweep that has a stored view and a finished job run:
    a sweep whose jobs all stopped before they opened a run (a refusal, or a dry run of an older giant)
    would open an empty view."""
    experiment = client.get_experiment(experiment_id)
    sweeps = client.search_runs(
        [experiment_id], filter_string=tag_filter(ROLE_TAG, SWEEP_ROLE), order_by=["start_time DESC"]
    )
    for sweep in sweeps:
        if f"{SHARED_VIEW_PREFIX}{sweep.info.run_id}" not in experiment.tags:
            continue
        finished = f"{jobs_filter(sweep.info.run_id)} AND attributes.status = 'FINISHED'"
        if client.search_runs([experiment_id], filter_string=finished, max_results=1):
            return sweep.info.run_id
    return None
