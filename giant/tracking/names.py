"""Every MLflow tag, role and metric name giant writes or reads, spelled once: the writers
(mlflow_logger, callbacks, traces, job, rescore, compare) and the readers (tables, compare's sources,
the scripts' filters) import them, so a renamed tag cannot leave a reader searching for the old one
(tests/tracking/test_tag_names.py finds a name spelled anywhere else). The values are what stored runs
hold: renaming one orphans every run logged before."""

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
# A saved view of the runs page, as MLflow 3's UI stores it on the experiment ("Share" button): the tag
# `<prefix><key>` holds the page's state as JSON, and `?viewStateShareKey=<key>` in the address opens it
# (giant.tracking.view writes one per sweep, keyed by the sweep's id).
SHARED_VIEW_PREFIX: Final = "mlflow.sharedViewState."
VIEW_SHARE_PARAM: Final = "viewStateShareKey"

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

# Plain tags of a job or sweep run (the tables and filters read them by these names, and users type
# them in --filter strings: "tags.model = 'gpt-5'")
SWEEP_ID_TAG: Final = "sweep_id"
OUTPUT_DIR_TAG: Final = "output_dir"
STATUS_TAG: Final = "status"
INTERRUPTION_TAG: Final = "interruption"
FAILURE_TAG: Final = "failure"
OVERRIDES_TAG: Final = "overrides"
CONFIG_HASH_TAG: Final = "config_hash"
DATASET_TAG: Final = "dataset"  # the benchmark(s) a job ran, "+"-joined; a comparison's, comma-joined
METRIC_NAME_TAG: Final = "metric_name"  # which metric "metric" is: accuracy or balanced_accuracy
PROVIDER_TAG: Final = "provider"
MODEL_TAG: Final = "model"
AGENT_MODE_TAG: Final = "agent_mode"
MAX_STEPS_TAG: Final = "T"  # agent.max_steps, the paper's T
CROP_SIZE_TAG: Final = "S"  # agent.crop_size, the paper's S
RUNS_PER_ITEM_TAG: Final = "runs_per_item"  # k: runs per item, majority-voted when k > 1
DATASET_HASH_TAG: Final = "dataset_hash"
# Which version of the job's questions it scored (giant.data.digest): the tables warn when runs side by
# side differ in it; also the digest of the job's MLflow input dataset
DATASET_DIGEST_TAG: Final = "dataset_digest"
DATASET_CONTEXT: Final = "evaluation"  # the input dataset's context (MLflow's mlflow.data.context tag)
GIT_COMMIT_TAG: Final = "git_commit"
INCOMPLETE_REASON_TAG: Final = "incomplete_reason"  # why a job's status is "incomplete"

# Tags of a trace (one per trajectory, giant.tracking.traces)
TRACE_ITEM_TAG: Final = "item"  # the item's key
TRACE_STATUS_TAG: Final = "status"  # the run's status (answered, timeout, ...)

# Metrics of a job run: its summary.json under these names (values copied, never recomputed;
# giant.tracking.mlflow_logger.summary_metrics). Scores are fractions in [0, 1].
MAIN_METRIC: Final = "metric"  # the task's metric (METRIC_NAME_TAG): voted when k > 1, failures wrong
BOOT_MEAN_METRIC: Final = "metric_boot_mean"  # its bootstrap over items: the tables' cell
BOOT_STD_METRIC: Final = "metric_boot_std"
CI_LOW_METRIC: Final = "metric_ci_low"  # the bootstrap's 95% interval
CI_HIGH_METRIC: Final = "metric_ci_high"
SCORED_ONLY_METRIC: Final = "metric_scored_only"  # over the items with an answer only
ACCURACY_METRIC: Final = "accuracy"
BALANCED_ACCURACY_METRIC: Final = "balanced_accuracy"
N_ITEMS_METRIC: Final = "n_items"  # items scored (failures count as incorrect, skipped ones excluded)
N_SCORED_METRIC: Final = "n_scored"  # items with a parseable answer
N_SKIPPED_METRIC: Final = "n_skipped"
N_DATASET_DEFECTS_METRIC: Final = "n_dataset_defects"  # data defects that concern the job's items
N_SLIDES_MISSING_METRIC: Final = "n_slides_missing"  # item-runs whose slide was not found
STEPS_MEAN_METRIC: Final = "steps_mean"
STEPS_MAX_METRIC: Final = "steps_max"
CROPS_PER_ITEM_METRIC: Final = "crops_per_item"
# µm/px of the images the model was shown (summary.json's magnification; 0.25 ~ 40x, 2.0 ~ 5x)
MPP_FINEST_METRIC: Final = "mpp_finest"
MPP_MEDIAN_METRIC: Final = "mpp_median"
TOKENS_INPUT_METRIC: Final = "tokens_input"
TOKENS_OUTPUT_METRIC: Final = "tokens_output"
TOKENS_REASONING_METRIC: Final = "tokens_reasoning"
TOKENS_CACHED_METRIC: Final = "tokens_cached"
TOKENS_CACHE_WRITE_METRIC: Final = "tokens_cache_write"
COST_METRIC: Final = "cost_usd"  # new spend (replayed calls cost nothing)
COST_PER_ITEM_METRIC: Final = "cost_per_item_usd"
CACHE_HIT_RATIO_METRIC: Final = "cache_hit_ratio"
CALLS_PAID_METRIC: Final = "calls_paid"
CALLS_REPLAYED_METRIC: Final = "calls_replayed"  # answered from the ledger (giant.llm.ledger)
CALLS_FLEX_METRIC: Final = "calls_flex"  # paid calls billed at the flex tier; the rest were standard
CALLS_BATCH_METRIC: Final = "calls_batch"  # paid calls billed at the batch tier
COST_FLEX_METRIC: Final = "cost_flex_usd"  # of COST_METRIC, billed at the flex tier
COST_BATCH_METRIC: Final = "cost_batch_usd"  # of COST_METRIC, billed at the batch tier
COST_REPLAYED_METRIC: Final = "cost_replayed_usd"  # what the replayed calls cost when first paid
WALL_S_METRIC: Final = "wall_s"
ITEMS_PER_HOUR_METRIC: Final = "items_per_hour"
ACTIVE_S_METRIC: Final = "active_s"
GPU_COST_METRIC: Final = "gpu_cost_usd"
OUTPUT_TOKENS_PER_S_METRIC: Final = "output_tokens_per_s"
CALLS_PER_MIN_METRIC: Final = "calls_per_min"
RUN_METRIC: Final = "run_metric"  # each of the k runs' metric, one step per run index
PER_RUN_STD_METRIC: Final = "per_run_std"  # the std over the k runs' metrics

# Metric-name prefixes: one metric per status and per setup cause of a job's summary
STATUS_METRIC_PREFIX: Final = "status_"
SETUP_METRIC_PREFIX: Final = "setup_"

# Where the model looked (summary.json's `navigation`, giant.record.summary.NavigationSummary): each
# scalar field under this prefix (`nav_coverage`, `nav_revisits`, `nav_hit_rate`, ...); a bootstrapped
# one also with its interval's ends; the by-step lists one MLflow step per crop (step 1 = the first crop).
NAVIGATION_METRIC_PREFIX: Final = "nav_"
CI_LOW_SUFFIX: Final = "_ci_low"
CI_HIGH_SUFFIX: Final = "_ci_high"

# Metrics of a sweep's parent run: its jobs, and how many of them failed or did not complete
N_JOBS_METRIC: Final = "n_jobs"
N_FAILED_METRIC: Final = "n_failed"
N_INCOMPLETE_METRIC: Final = "n_incomplete"

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
