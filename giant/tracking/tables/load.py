"""Job runs read back from MLflow as `RunRecord`s, by the tag and metric names of giant.tracking.names
(so a table can be rebuilt at any time from the store alone, no output folders needed)."""

from __future__ import annotations

import re

import mlflow
from mlflow.entities import Run

from giant.errors import ConfigError
from giant.tracking.names import (
    DATASET_TAG,
    REPORT_ROLE,
    RESCORE_TAG,
    ROLE_TAG,
    SOURCE_START_TAG,
    STATUS_TAG,
    SWEEP_ID_TAG,
    SWEEP_ROLE,
    tag_filter,
)
from giant.tracking.tables.rows import RunRecord, TierSpend

SKIP_ROLES = frozenset({SWEEP_ROLE, REPORT_ROLE})  # parent and report runs carry no task metric


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "", "None") else None
    except ValueError:
        return None


def _count(value: float | None) -> int | None:
    return None if value is None else round(value)


def _tiers(metrics: dict[str, float]) -> TierSpend | None:
    """Calls and dollars per billing tier; None for a run logged before these metrics existed."""
    if "calls_paid" not in metrics:
        return None
    return TierSpend(
        calls_paid=round(metrics["calls_paid"]),
        calls_flex=round(metrics.get("calls_flex", 0)),
        calls_batch=round(metrics.get("calls_batch", 0)),
        cost_usd=metrics.get("cost_usd"),
        cost_flex_usd=metrics.get("cost_flex_usd", 0.0),
        cost_batch_usd=metrics.get("cost_batch_usd", 0.0),
    )


def _record(run: Run) -> RunRecord | None:
    tags, metrics = run.data.tags, run.data.metrics
    if tags.get(ROLE_TAG) in SKIP_ROLES or DATASET_TAG not in tags:
        return None
    if "metric_boot_mean" not in metrics or "metric_boot_std" not in metrics:
        return None
    settings = {
        name.removeprefix("agent."): number
        for name, value in run.data.params.items()
        if name.startswith("agent.") and (number := _int_or_none(value)) is not None
    }
    for tag, name in (("T", "max_steps"), ("S", "crop_size")):
        if (number := _int_or_none(tags.get(tag))) is not None:
            settings[name] = number
    return RunRecord(
        run_id=run.info.run_id,
        task=tags["dataset"],
        agent_mode=tags.get("agent_mode", "?"),
        model=tags.get("model", "?"),
        runs_per_item=_int_or_none(tags.get("runs_per_item")) or 1,
        settings=settings,
        tools=tuple(re.findall(r"\w+", run.data.params.get("agent.tools", ""))),
        mean=metrics["metric_boot_mean"],
        std=metrics["metric_boot_std"],
        ci_low=metrics.get("metric_ci_low"),
        ci_high=metrics.get("metric_ci_high"),
        n_items=_count(metrics.get("n_items")),
        failed=_count(metrics["n_items"] - metrics["n_scored"])
        if "n_items" in metrics and "n_scored" in metrics
        else None,
        cost_per_item=metrics.get("cost_per_item_usd"),
        tiers=_tiers(metrics),
        complete=tags.get(STATUS_TAG) != "incomplete",
        start_time=_int_or_none(tags.get(SOURCE_START_TAG)) or run.info.start_time or 0,
        rescored_at=(run.info.start_time or 0) if RESCORE_TAG in tags else 0,
    )


def load_runs(
    *, experiment: str = "giant", sweep_id: str | None = None, filter_string: str | None = None
) -> list[RunRecord]:
    """Job runs of an experiment (optionally one sweep, or an MLflow filter) from the current
    tracking URI. Raises ConfigError with one line when there is nothing to tabulate."""
    where = " and ".join(
        part for part in (tag_filter(SWEEP_ID_TAG, sweep_id) if sweep_id else "", filter_string or "") if part
    )
    if mlflow.MlflowClient().get_experiment_by_name(experiment) is None:
        raise ConfigError(
            f"no MLflow experiment '{experiment}' at {mlflow.get_tracking_uri()}: "
            "run `make demo` or scripts/run_eval.py first (or pass --experiment/--tracking-uri)"
        )
    runs = mlflow.search_runs(experiment_names=[experiment], filter_string=where, output_format="list")
    assert isinstance(runs, list)
    records = [r for r in (_record(run) for run in runs) if r is not None]
    if not records:
        scope = f" matching '{where}'" if where else ""
        raise ConfigError(
            f"no finished job runs{scope} in experiment '{experiment}' at {mlflow.get_tracking_uri()}: "
            "run `make demo` or scripts/run_eval.py first"
        )
    return records
