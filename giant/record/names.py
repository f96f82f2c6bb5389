"""The MLflow metric names of a job run: its summary.json's fields under these names, each declared on
the field it comes from (giant.record.summary, `MlflowName`), so the writer (giant.tracking.mlflow_logger)
and the reader (giant.tracking.tables.load) are both generated from that one declaration. They live
here, below giant.tracking, because the record declares them; giant.tracking.names re-exports them, and
tests/tracking/test_tag_names.py treats both modules as the one place a name is spelled. The values are
what stored runs hold: renaming one orphans every run logged before."""

from __future__ import annotations

from typing import Final

# Values copied from summary.json, never recomputed; scores are fractions in [0, 1].
MAIN_METRIC: Final = "metric"  # the task's metric (METRIC_NAME_TAG): voted when k > 1, failures wrong
BOOT_MEAN_METRIC: Final = "metric_boot_mean"  # its bootstrap over items: the tables' cell
BOOT_STD_METRIC: Final = "metric_boot_std"
CI_LOW_METRIC: Final = "metric_ci_low"  # the bootstrap's 95% interval
CI_HIGH_METRIC: Final = "metric_ci_high"
SCORED_ONLY_METRIC: Final = "metric_scored_only"  # over the items with an answer only
# each registered metric (giant.eval.metrics) is logged under its own name ("accuracy", ...)
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
# How the provider's rate limits shaped the run (summary.json's pacing, giant.llm.pacer)
REQUESTS_429_METRIC: Final = "requests_429"  # requests answered 429 (rate limit)
RATE_PAUSED_S_METRIC: Final = "rate_paused_s"  # seconds every lane was held by 429 pauses
EFFECTIVE_RPM_METRIC: Final = "effective_rpm"  # answered requests per minute of the makespan
EFFECTIVE_TPM_METRIC: Final = "effective_tpm"  # their tokens per minute of the makespan
MAKESPAN_BOUND_S_METRIC: Final = "makespan_bound_s"  # the fastest the limits and latencies allowed
MAKESPAN_RATIO_METRIC: Final = "makespan_over_bound"
RUN_METRIC: Final = "run_metric"  # each of the k runs' metric, one step per run index
PER_RUN_STD_METRIC: Final = "per_run_std"  # the std over the k runs' metrics

# Metric-name prefixes: one metric per status and per setup cause of a job's summary
STATUS_METRIC_PREFIX: Final = "status_"
SETUP_METRIC_PREFIX: Final = "setup_"
# one metric per enabled tool and measure: tool_<tool>_calls, _item_runs, _correct (giant.record.tool_use)
TOOL_METRIC_PREFIX: Final = "tool_"

# Where the model looked (summary.json's `navigation`, giant.record.summary.NavigationSummary): each
# scalar field under this prefix (`nav_coverage`, `nav_revisits`, `nav_hit_rate`, ...); a bootstrapped
# one also with its interval's ends; the by-step lists one MLflow step per crop (step 1 = the first crop).
NAVIGATION_METRIC_PREFIX: Final = "nav_"
CI_LOW_SUFFIX: Final = "_ci_low"
CI_HIGH_SUFFIX: Final = "_ci_high"

# Metrics of a k-run job (runs_per_item > 1) beside its vote: the mean over the k runs of each run's
# metric, and that mean's bootstrap over items (mean, std, 95% interval). The tables read them as the
# job's "x1" row (giant.tracking.tables.load); a job logged before the bootstrap has no such row.
PER_RUN_MEAN_METRIC: Final = "per_run_mean"
PER_RUN_BOOT_MEAN_METRIC: Final = "per_run_mean_boot_mean"
PER_RUN_BOOT_STD_METRIC: Final = "per_run_mean_boot_std"
PER_RUN_CI_LOW_METRIC: Final = "per_run_mean_ci_low"
PER_RUN_CI_HIGH_METRIC: Final = "per_run_mean_ci_high"
