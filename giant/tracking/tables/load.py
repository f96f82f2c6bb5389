"""Job runs read back from MLflow as `RunRecord`s: the tags by the names of giant.tracking.names, the
metrics as the summary's fields that declared them (giant.record.logged.read_logged, by path), so a
table can be rebuilt at any time from the store alone, no output folders needed.

A job with k > 1 runs per item is two records: its vote ("xk", the metric) and its per-run mean ("x1":
the mean over the k runs of each run's metric, with that mean's bootstrap), which shares its row with
one-run jobs of the same configuration (see `latest_per_row_and_task` for which of them a cell shows).
A k-run job logged before the per-run bootstrap existed is its vote alone (re-scoring it with
scripts/rescore.py logs the bootstrap)."""

from __future__ import annotations

import re

import mlflow
from mlflow.entities import Run

from giant.agent.modes import find_mode
from giant.agent.modes.base import SettingValue
from giant.errors import ConfigError
from giant.record.logged import read_logged
from giant.record.summary import Summary
from giant.tracking.names import (
    AGENT_MODE_TAG,
    DATASET_DIGEST_TAG,
    DATASET_TAG,
    MODEL_TAG,
    REPORT_ROLE,
    RESCORE_TAG,
    ROLE_TAG,
    RUNS_PER_ITEM_TAG,
    SETTING_TAGS,
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


def _tiers(logged: dict[str, float]) -> TierSpend | None:
    """Calls and dollars per billing tier (TierSpend's fields are the summary's totals of the same
    names); None for a run logged before these metrics existed."""
    if "totals.calls_paid" not in logged:
        return None
    fields = {name: logged[f"totals.{name}"] for name in TierSpend.model_fields if f"totals.{name}" in logged}
    return TierSpend.model_validate(fields)


def _records(run: Run) -> list[RunRecord]:
    """The run's record, and with k > 1 runs per item also its per-run mean's; none for a run that is
    not a job or logged no score."""
    logged = read_logged(Summary, run.data.metrics)
    record = _record(run, logged)
    if record is None:
        return []
    per_run = _per_run_record(record, logged)
    return [record] if per_run is None else [record, per_run]


def _per_run_record(record: RunRecord, logged: dict[str, float]) -> RunRecord | None:
    """A k-run job's per-run mean as a one-run record (so it takes a one-run job's row and published
    row); its cost per item is one run's (the job's over k), its tier spend stays with the vote's
    record (counted once), its failed items are unknown. None for k = 1, or when the per-run bootstrap
    was not logged (a run of an older giant)."""
    k = record.runs_per_item
    if k < 2 or "per_run_bootstrap.mean" not in logged or "per_run_bootstrap.std" not in logged:
        return None
    cost = record.cost_per_item
    return record.model_copy(
        update={
            "runs_per_item": 1,
            "per_run_mean_of": k,
            "mean": logged["per_run_bootstrap.mean"],
            "std": logged["per_run_bootstrap.std"],
            "ci_low": logged.get("per_run_bootstrap.ci_low"),
            "ci_high": logged.get("per_run_bootstrap.ci_high"),
            "failed": None,
            "cost_per_item": None if cost is None else cost / k,
            "tiers": None,
        }
    )


def _other_row_settings(
    agent_mode: str, params: dict[str, str], known: dict[str, SettingValue]
) -> dict[str, SettingValue]:
    """The mode's row settings that are not whole numbers (patch mode's inference and patch_mpp), as
    logged; absent where the run predates them (the mode's row_detail names that value)."""
    mode = find_mode(agent_mode)
    out: dict[str, SettingValue] = {}
    for name in mode.row_settings if mode else ():
        value = params.get(f"agent.{name}")
        if name not in known and value not in (None, "None"):
            try:
                out[name] = float(value)
            except ValueError:
                out[name] = value
    return out


def _record(run: Run, logged: dict[str, float]) -> RunRecord | None:
    """The job's record from its tags, params and its summary's fields as logged (`logged`, by path)."""
    tags = run.data.tags
    if tags.get(ROLE_TAG) in SKIP_ROLES or DATASET_TAG not in tags:
        return None
    if "metric.mean" not in logged or "metric.std" not in logged:
        return None
    settings: dict[str, SettingValue] = {
        name.removeprefix("agent."): number
        for name, value in run.data.params.items()
        if name.startswith("agent.") and (number := _int_or_none(value)) is not None
    }
    for tag, key in SETTING_TAGS.items():  # T and S: the agent's whole-number settings tagged
        if key.startswith("agent.") and (number := _int_or_none(tags.get(tag))) is not None:
            settings[key.removeprefix("agent.")] = number
    settings.update(_other_row_settings(tags.get(AGENT_MODE_TAG, ""), run.data.params, settings))
    return RunRecord(
        run_id=run.info.run_id,
        task=tags[DATASET_TAG],
        agent_mode=tags.get(AGENT_MODE_TAG, "?"),
        model=tags.get(MODEL_TAG, "?"),
        runs_per_item=_int_or_none(tags.get(RUNS_PER_ITEM_TAG)) or 1,
        settings=settings,
        tools=tuple(re.findall(r"\w+", run.data.params.get("agent.tools", ""))),
        prompts=run.data.params.get("agent.prompts", ""),
        mean=logged["metric.mean"],
        std=logged["metric.std"],
        ci_low=logged.get("metric.ci_low"),
        ci_high=logged.get("metric.ci_high"),
        n_items=_count(logged.get("n_items")),
        failed=_count(logged["n_items"] - logged["n_scored"])
        if "n_items" in logged and "n_scored" in logged
        else None,
        cost_per_item=logged.get("cost_per_item"),
        tiers=_tiers(logged),
        complete=tags.get(STATUS_TAG) != "incomplete",
        # summary.json's setup_causes as logged (MLflow setup_<cause>): their sum is n_unmeasured
        unmeasured=_count(sum(v for path, v in logged.items() if path.startswith("setup_causes."))) or 0,
        dataset_digest=tags.get(DATASET_DIGEST_TAG, ""),
        navigation={
            path.removeprefix("navigation."): value
            for path, value in logged.items()
            if path.startswith("navigation.")
        },
        start_time=_int_or_none(tags.get(SOURCE_START_TAG)) or run.info.start_time or 0,
        rescored_at=(run.info.start_time or 0) if RESCORE_TAG in tags else 0,
    )


def load_runs(
    *, experiment: str = "giant", sweep_id: str | None = None, filter_string: str | None = None
) -> list[RunRecord]:
    """Job runs of an experiment (optionally one sweep, or an MLflow filter) from the current
    tracking URI, a k-run job as two records (its vote and its per-run mean). Raises ConfigError
    with one line when there is nothing to tabulate."""
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
    records = [record for run in runs for record in _records(run)]
    if not records:
        scope = f" matching '{where}'" if where else ""
        raise ConfigError(
            f"no finished job runs{scope} in experiment '{experiment}' at {mlflow.get_tracking_uri()}: "
            "run `make demo` or scripts/run_eval.py first"
        )
    return records
