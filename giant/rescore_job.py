"""One re-score, end to end: a finished job (its folder or its MLflow run) -> its items -> the
recorded answers scored again -> a new job folder and a new MLflow run tagged as a re-score.

No provider is built or checked: the source's provider settings are recorded as they were (a
scripted run whose script moved, or an API run on a machine without the key, re-scores the same).
scripts/rescore.py only hands the composed config and the job's context (giant.context) here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from giant.agent.modes import parse_agent
from giant.config import (
    CONF_DIR,
    DatasetSettings,
    PathSettings,
    RunOptions,
    RunSettings,
    TrackingSettings,
    one_line,
    record_keys,
    resolve,
    shipped,
)
from giant.context import JobContext
from giant.errors import ConfigError
from giant.eval.annotations import Annotations
from giant.eval.items import JobData
from giant.eval.navigation import renavigate
from giant.eval.rescore_records import changed_record, rescore_records, rescore_summary
from giant.job import finish_tracking, load_data, write_outputs
from giant.llm.config import ProviderConfig, settings_class
from giant.record import JobLayout, write_results, write_summary
from giant.record.read import FIX, JobRecord, read_job
from giant.roles import Role
from giant.tools.settings import ToolSettings
from giant.tracking.job_runs import MlflowRuns
from giant.tracking.names import (
    CONFIG_HASH_TAG,
    FAILURE_TAG,
    INTERRUPTION_TAG,
    MLFLOW_PREFIX,
    OUTPUT_DIR_TAG,
    OVERRIDES_TAG,
    RESCORE_TAG,
    SOURCE_START_TAG,
    STATUS_TAG,
    SWEEP_ID_TAG,
)

# Tags of the source run that describe that run, not its configuration: not copied to the re-score.
RUN_ONLY_TAGS = frozenset(
    {STATUS_TAG, OUTPUT_DIR_TAG, OVERRIDES_TAG, INTERRUPTION_TAG, FAILURE_TAG, CONFIG_HASH_TAG}
)


class NavigationChanges(BaseModel):
    """conf/rescore.yaml `navigation`: the thresholds a re-score measures with (null keeps the source's)."""

    model_config = ConfigDict(extra="forbid")
    coverage_mpp: float | None = Field(gt=0, description="Coverage counts crops at or finer than this µm/px.")
    hit_mpp: float | None = Field(gt=0, description="A hit is a crop on target at or finer than this µm/px.")
    hit_overlap: float | None = Field(
        gt=0, le=1, description="The share of a crop a target class must cover."
    )


class RescoreSettings(BaseModel):
    """conf/rescore.yaml validated once (defaults and meanings there; None keeps the source's)."""

    model_config = ConfigDict(extra="ignore")  # `paths` only feeds interpolations
    source: str = Field(
        description="The job to re-score: a job folder (holding results.jsonl) or an MLflow run id."
    )
    tie_rule: str | None = Field(description="Majority vote over runs; null keeps the source run's rule.")
    panda_null_as_zero: bool | None = Field(
        description='"isup_grade": null as grade 0 (true) or as no answer (false); null: as the source run.'
    )
    bootstrap_replicates: int | None = Field(
        description="Bootstrap replicates for mean +- std and the 95% interval; null keeps the source's."
    )
    navigation: NavigationChanges = Field(description="Navigation thresholds; a null one keeps the source's.")
    annotations: Path | None = Field(
        description="A folder of per-slide annotations for the evidence metrics; null: the source's."
    )
    tracking: TrackingSettings

    @classmethod
    def from_config(cls, cfg: DictConfig) -> RescoreSettings:
        data = resolve(cfg)
        if data.get("source") in (None, ""):
            raise ConfigError(f"source is required: {FIX}")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(one_line(exc)) from None


def rescore_job(cfg: DictConfig, context: JobContext) -> float:
    """Re-score into `context.output_dir`; returns the new main metric."""
    options = RescoreSettings.from_config(cfg)
    source = read_job(options.source, MlflowRuns(options.tracking) if options.tracking.enabled else None)
    changes = {key: _plain(getattr(options, key)) for key in record_keys(Role.SCORING)}
    record = changed_record(_filled(source.config), changes)
    record["tracking"] = options.tracking.model_dump(mode="json")
    if options.annotations is not None:
        record["dataset"]["annotations"]["path"] = str(options.annotations)
    settings = settings_of(record)
    data = _items(settings, source)
    run = settings.run
    records = rescore_records(source.records, data.items, run.scoring)
    if source.folder is not None:  # where the trajectories are: navigation and evidence measured again
        records = renavigate(records, source.folder, Annotations.of(data.annotations), run.navigation)
    summary = rescore_summary(
        records,
        data.items,
        source.summary,
        runs_per_item=run.runs_per_item,
        seed=run.seed,
        scoring=run.scoring,
    )
    out_dir = context.output_dir
    write_results(JobLayout(out_dir).results, records)
    write_summary(out_dir, summary)
    rescored = JobRecord(str(out_dir), records, summary, record, folder=out_dir)
    outputs = write_outputs(settings, rescored)
    tracked_run = settings.tracking.enabled
    run_id = _track(settings, source, data, rescored, outputs, context) if tracked_run else None
    before = source.summary.metric.point
    where = f"; MLflow run {run_id}" if run_id else ""
    print(
        f"rescore of {source.where}: {summary.benchmark} {summary.metric_name} {before:.3f} -> "
        f"{summary.metric.point:.3f} ± {summary.metric.std:.3f} (n={summary.n_items}, "
        f"tie_rule={run.tie_rule}, panda_null_as_zero={run.panda_null_as_zero}) -> {out_dir}{where}"
    )
    return summary.metric.point


def _plain(value: object) -> object:
    """A setting as the record holds it (a section as its dict)."""
    return value.model_dump() if isinstance(value, BaseModel) else value


def _filled(record: dict[str, Any]) -> dict[str, Any]:
    """A record written before navigation was measured, with the shipped navigation settings and
    annotations (none): what such a run would have had."""
    filled = {"navigation": shipped(RunOptions).navigation.model_dump(mode="json"), **record}
    dataset = dict(filled.get("dataset") or {})
    dataset.setdefault("annotations", _shipped_annotations())
    return {**filled, "dataset": dataset}


def _shipped_annotations() -> dict[str, Any]:
    loaded = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "dataset_common.yaml"), resolve=False)
    assert isinstance(loaded, dict)
    return dict(loaded["annotations"])


def settings_of(record: dict[str, Any]) -> RunSettings:
    """A job's settings from its resolved_config.json. The provider section is taken as recorded,
    not validated: a re-score never builds the provider, so its script or key need not exist."""
    data = dict(record)
    sections = {
        key: data.pop(key, None) for key in ("paths", "provider", "dataset", "agent", "tracking", "tools")
    }
    try:
        provider = sections["provider"] or {}
        return RunSettings.model_construct(
            paths=PathSettings.model_validate(sections["paths"]),
            provider=cast(
                "ProviderConfig", settings_class(str(provider.get("name"))).model_construct(**provider)
            ),
            # no `path` in records of runs without a task file (RunSettings.record leaves it out)
            dataset=DatasetSettings.model_validate({"path": None, **(sections["dataset"] or {})}),
            agent=parse_agent(sections["agent"] or {}),
            run=RunOptions.model_validate({"verbose": False, **data}),  # no `verbose` in older records
            tracking=TrackingSettings.model_validate(sections["tracking"]),
            tools=ToolSettings.model_validate(sections["tools"]) if sections["tools"] else None,
        )
    except ValidationError as exc:
        raise ConfigError(one_line(exc)) from None


def _items(settings: RunSettings, source: JobRecord) -> JobData:
    """The source's items, loaded as it loaded them; refused when the data changed since."""
    try:
        data = load_data(settings)
    except OSError as exc:
        raise ConfigError(f"source={source.where}: its dataset cannot be loaded ({exc}); {FIX}") from None
    recorded = source.summary.provenance.dataset_hash
    if data.dataset_hash != recorded:
        raise ConfigError(
            f"source={source.where}: the dataset changed since the run (hash {data.dataset_hash}, "
            f"the run had {recorded}); re-score with the data the run used"
        )
    return data


def _track(
    settings: RunSettings,
    source: JobRecord,
    data: JobData,
    rescored: JobRecord,
    outputs: dict[str, Path],
    context: JobContext,
) -> str:
    from giant.tracking.mlflow_logger import JobRun, job_tags, run_name, tracked

    copied = {key: value for key, value in source.tags.items() if not key.startswith(MLFLOW_PREFIX)}
    tags = {key: value for key, value in copied.items() if key not in RUN_ONLY_TAGS}
    tags.update(
        job_tags(
            settings,
            data.items,
            dataset_hash=data.dataset_hash,
            git_commit=rescored.summary.provenance.git_commit,
            sweep_id=source.tags.get(SWEEP_ID_TAG, ""),
            digests=data.digests,
        )
    )
    tags[RESCORE_TAG] = source.run.run_id if source.run else str(Path(source.where).resolve())
    if source.run and source.run.start_time:
        tags[SOURCE_START_TAG] = str(source.run.start_time)
    tags[OUTPUT_DIR_TAG] = str(rescored.folder)
    tags[OVERRIDES_TAG] = " ".join(context.overrides)[:5000]
    if not settings.tracking.run_name:
        name = f"{run_name(settings, rescored.summary.benchmark)}-rescore"
        settings.tracking = settings.tracking.model_copy(update={"run_name": name})
    job = JobRun.start(settings, tags=tags, sweep=None)
    with tracked(job):
        finish_tracking(job, settings, rescored, outputs)
    return job.run_id
