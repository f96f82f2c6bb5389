"""What a finished sweep hands the researcher: its table (as `make demo` prints it), a plot of the task's
metric against each swept numeric setting, the MLflow address that opens the comparison, and the
`compare.py` command for each pair of jobs that differ in one setting. The table's files and the plot
are also logged on the sweep's parent run, so the UI holds the result beside the jobs.

Every score here is the job's point estimate (`metric`: the task's metric on its items) with the
bootstrap's 95% interval as its error bar, the number the job line and the MLflow view show.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import TYPE_CHECKING

from giant.record.headline import navigation_phrase
from giant.record.summary import Bootstrap, NavigationSummary
from giant.tracking.names import (
    CI_HIGH_METRIC,
    CI_HIGH_SUFFIX,
    CI_LOW_METRIC,
    CI_LOW_SUFFIX,
    DATASET_TAG,
    MAIN_METRIC,
    NAVIGATION_METRIC_PREFIX,
)
from giant.tracking.view import (
    CHART_MODE,
    TABLE_MODE,
    jobs_filter,
    numeric_settings,
    param_number,
    store_view_from_runs,
    view_address,
)
from giant.tracking.view import (
    scored as scored_runs,
)

if TYPE_CHECKING:
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient

PLOT = "sweep_metric.png"
NAVIGATION_TABLE = "navigation.md"  # written by giant.tracking.tables.write_report when jobs measured it
TABLES_DIR = "tables"  # under the sweep folder, and the parent run's artifact folder
MAX_COMMANDS = 8  # compare.py commands printed; the rest are counted
# As scripts/make_tables.py introduces its tables: which number a cell is (the job line, the plot and
# MLflow's `metric` give the point estimate; the tables the paper's statistic, to sit beside it)
TABLE_HEADING = (
    "Each cell: the bootstrap mean ± std over items (%), the paper's statistic; the job lines, the plot "
    "and MLflow's `metric` give the point estimate.\n"
)
COST_HEADING = (
    "Cost per item and failed items (no scored answer) per cell, then calls and cost per billing tier:\n"
)
UI_PORT = "MLFLOW_PORT"  # the port `make ui` serves on (its default: 5000)


def sweep_plot(runs: list[Run], swept: list[str], path: Path) -> Path | None:
    """One panel per swept numeric setting: the metric (percent) with its bootstrap 95% interval, one
    series per task and value of the other swept settings. None when no setting is numeric."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scored = scored_runs(runs)  # an incomplete job's metric is not a score (view.view_filter)
    settings = numeric_settings(scored, swept)
    if not scored or not settings:
        return None
    fig, axes = plt.subplots(1, len(settings), figsize=(6 * len(settings), 4.2), squeeze=False)
    for ax, setting in zip(axes[0], settings, strict=True):
        others = [key for key in swept if key != setting]
        series: dict[tuple[str, ...], list[Run]] = {}
        for run in scored:
            task = run.data.tags.get(DATASET_TAG, "?")
            # dataset.benchmark names the task again: left out of the label
            label = (task, *(f"{k}={v}" for k in others if (v := run.data.params.get(k)) != task))
            series.setdefault(label, []).append(run)
        for label, members in sorted(series.items()):
            members.sort(key=lambda run: param_number(run.data.params[setting]) or 0.0)
            xs = [param_number(run.data.params[setting]) for run in members]
            ys = [100 * run.data.metrics[MAIN_METRIC] for run in members]
            metrics = [run.data.metrics for run in members]
            ends = [(m.get(CI_LOW_METRIC), m.get(CI_HIGH_METRIC)) for m in metrics]
            low = [0.0 if lo is None else y - 100 * lo for y, (lo, _) in zip(ys, ends, strict=True)]
            high = [0.0 if hi is None else 100 * hi - y for y, (_, hi) in zip(ys, ends, strict=True)]
            ax.errorbar(xs, ys, yerr=[low, high], marker="o", capsize=3, label=" · ".join(label))
        xs_all = sorted({param_number(run.data.params[setting]) or 0.0 for run in scored})
        ax.set_xticks(xs_all, [f"{x:g}" for x in xs_all])  # the values run, not matplotlib's grid
        ax.set_xlabel(setting)
        ax.set_ylabel("task metric (%) ± bootstrap 95% CI")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def navigation_lines(jobs: list[Run], table: Path) -> list[str]:
    """Where each job's model looked, one line per job with its figures (giant.record.headline), and
    the file that has them all ([] when no job measured any)."""
    lines = []
    for run in sorted(jobs, key=lambda run: run.info.run_name or ""):
        phrase = navigation_phrase(navigation_of(run.data.metrics))
        if phrase:
            lines.append(f"  {run.info.run_name}: {phrase}")
    if not lines:
        return []
    where = f" (all of them in {table})" if table.is_file() else ""
    return [f"where the model looked{where}:", *lines]


def navigation_of(metrics: dict[str, float]) -> NavigationSummary | None:
    """The navigation figures of a job's MLflow metrics (`nav_<field>`), as its summary has them."""

    def get(field: str) -> float | None:
        return metrics.get(f"{NAVIGATION_METRIC_PREFIX}{field}")

    if get("item_runs") is None:
        return None
    hit, low, high = get("hit_rate"), get("hit_rate" + CI_LOW_SUFFIX), get("hit_rate" + CI_HIGH_SUFFIX)
    interval = None
    if hit is not None and low is not None and high is not None:
        interval = Bootstrap(point=hit, mean=hit, std=0.0, ci_low=low, ci_high=high, replicates=0, seed=0)
    return NavigationSummary(
        item_runs=int(get("item_runs") or 0),
        steps=get("steps") or 0.0,
        crops=get("crops") or 0.0,
        finest_mpp=get("finest_mpp"),
        coverage=get("coverage"),
        revisits=get("revisits"),
        annotated=int(get("annotated") or 0),
        hit_rate=interval,
    )


def pair_commands(runs: list[Run], swept: list[str]) -> list[str]:
    """`python scripts/compare.py A B` for every two jobs of one task that differ in one swept setting."""
    lines = []
    for a, b in itertools.combinations(runs, 2):
        if a.data.tags.get(DATASET_TAG) != b.data.tags.get(DATASET_TAG):
            continue
        differ = [key for key in swept if a.data.params.get(key) != b.data.params.get(key)]
        if len(differ) == 1:
            key, task = differ[0], a.data.tags.get(DATASET_TAG)
            values = f"{key}={a.data.params.get(key)} vs {b.data.params.get(key)}"
            lines.append(f"python scripts/compare.py {a.info.run_id} {b.info.run_id}   # {task}: {values}")
    return lines


def ui_base(tracking_uri: str) -> str:
    """The UI that shows this store: the tracking server itself, or the one `make ui` starts."""
    if tracking_uri.startswith(("http://", "https://")):
        return tracking_uri.rstrip("/")
    return f"http://127.0.0.1:{os.environ.get(UI_PORT, '5000')}"


def finish_sweep(
    client: MlflowClient,
    tracking_uri: str,
    experiment: str,
    experiment_id: str,
    sweep_id: str,
    sweep_dir: Path,
) -> list[str]:
    """Write and log the sweep's result on its parent run; returns the lines to print."""
    import mlflow

    from giant.errors import ConfigError
    from giant.tracking.tables.formats import cost_markdown, to_markdown
    from giant.tracking.tables.load import load_runs
    from giant.tracking.tables.report import write_report

    swept = store_view_from_runs(client, experiment_id, sweep_id)
    jobs = client.search_runs([experiment_id], filter_string=jobs_filter(sweep_id), max_results=5000)
    out = sweep_dir / TABLES_DIR
    lines: list[str] = []
    mlflow.set_tracking_uri(tracking_uri)
    try:
        report = write_report(load_runs(experiment=experiment, sweep_id=sweep_id), out)
    except ConfigError as err:  # no job logged a score (every job failed)
        lines.append(f"no table: {err}")
        files: list[Path] = []
    else:
        lines += [TABLE_HEADING, to_markdown(report.table), COST_HEADING, cost_markdown(report.table)]
        files = list(report.files)
    out.mkdir(parents=True, exist_ok=True)
    lines += navigation_lines(jobs, out / NAVIGATION_TABLE)
    plot = sweep_plot(jobs, swept, out / PLOT)
    if plot is not None:
        files.append(plot)
        lines.append(f"plot: {plot}")
    for path in files:
        client.log_artifact(sweep_id, str(path), artifact_path=TABLES_DIR)
    base = ui_base(tracking_uri)
    lines.append(f"MLflow (make ui): {view_address(base, experiment_id, sweep_id, TABLE_MODE)}")
    lines.append(f"charts: {view_address(base, experiment_id, sweep_id, CHART_MODE)}")
    commands = pair_commands(jobs, swept)
    if commands:
        lines.append("compare two jobs that differ in one setting:")
        lines += [f"  {line}" for line in commands[:MAX_COMMANDS]]
        if len(commands) > MAX_COMMANDS:
            lines.append(f"  ... and {len(commands) - MAX_COMMANDS} more pairs")
    return lines
