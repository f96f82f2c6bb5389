"""Every MLflow tag, role and metric-prefix name giant writes or reads (and the per-run metrics of a
k-run job), spelled once: the writers
(mlflow_logger, callbacks, job, rescore, compare) and the readers (tables, compare's sources, the
tests) import them, so a renamed tag cannot leave a reader searching for the old one."""

from __future__ import annotations

from typing import Final

# MLflow's own tags
MLFLOW_PREFIX: Final = "mlflow."  # every tag MLflow sets itself starts with it
PARENT_TAG: Final = "mlflow.parentRunId"  # nests a job run under its sweep's parent run
SOURCE_RUN: Final = "mlflow.sourceRun"  # trace metadata key that links a trace to its run in the UI
# The experiment's kind, as MLflow 3's UI reads it (the tag's value, when its "GenAI | Model training"
# switch is off): giant's experiments are model development, so the UI opens them on the runs table,
# not on the GenAI overview. Set on giant's experiments when created, and on older ones that lack it.
EXPERIMENT_KIND_TAG: Final = "mlflow.experimentKind"
MODEL_DEVELOPMENT: Final = "custom_model_development"

# giant's namespaced tags
ROLE_TAG: Final = "giant.role"  # what a run is: one of the roles below
COMPARED_TAG: Final = "giant.compared"  # a comparison's compared runs (ids or folders), comma-separated
# A re-score (scripts/rescore.py) is tagged with the run it re-scores and when that run's
# configuration first ran: it takes its source's place in time, so it replaces its source (and
# earlier re-scores of it) in a table cell, while a newer run of the same configuration replaces both.
RESCORE_TAG: Final = "giant.rescore_of"
SOURCE_START_TAG: Final = "giant.source_start_time"

# Values of ROLE_TAG
JOB_ROLE: Final = "job"
SWEEP_ROLE: Final = "sweep"
REPORT_ROLE: Final = "report"
COMPARISON_ROLE: Final = "comparison"

# Plain tags of a job or sweep run (the tables and filters read them by these names)
SWEEP_ID_TAG: Final = "sweep_id"
OUTPUT_DIR_TAG: Final = "output_dir"
STATUS_TAG: Final = "status"
INTERRUPTION_TAG: Final = "interruption"
FAILURE_TAG: Final = "failure"
OVERRIDES_TAG: Final = "overrides"
CONFIG_HASH_TAG: Final = "config_hash"
DATASET_TAG: Final = "dataset"

# Metric-name prefixes: one metric per status and per setup cause of a job's summary
STATUS_METRIC_PREFIX: Final = "status_"
SETUP_METRIC_PREFIX: Final = "setup_"

# Metrics of a k-run job (runs_per_item > 1) beside its vote: the mean over the k runs of each run's
# metric, and that mean's bootstrap over items (mean, std, 95% interval). The tables read them as the
# job's "x1" row (giant.tracking.tables.load); a job logged before the bootstrap has no such row.
PER_RUN_MEAN_METRIC: Final = "per_run_mean"
PER_RUN_BOOT_MEAN_METRIC: Final = "per_run_mean_boot_mean"
PER_RUN_BOOT_STD_METRIC: Final = "per_run_mean_boot_std"
PER_RUN_CI_LOW_METRIC: Final = "per_run_mean_ci_low"
PER_RUN_CI_HIGH_METRIC: Final = "per_run_mean_ci_high"


def tag_filter(tag: str, value: str) -> str:
    """An MLflow search clause matching one tag (backquoted: names with a dot need it)."""
    return f"tags.`{tag}` = '{value}'"
