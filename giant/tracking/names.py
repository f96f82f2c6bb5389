"""Every MLflow tag, role and metric name giant writes or reads, spelled once: the writers
(mlflow_logger, callbacks, traces, job, rescore, compare) and the readers (tables, compare's sources,
the scripts' filters) import them, so a renamed tag cannot leave a reader searching for the old one
(tests/tracking/test_tag_names.py finds a name spelled anywhere else). The values are what stored runs
hold: renaming one orphans every run logged before."""

from __future__ import annotations

from typing import Final

# The metric names of a job run (its summary's fields) are declared with the summary, below tracking
# (giant.record.names): re-exported here, so every name is still imported from this one module.
from giant.record.names import *  # noqa: F403

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
# The settings a job run is also tagged with, each by the key of the settings' record it copies (its
# MLflow param): the tags are written (giant.tracking.mlflow_logger.job_tags) and read back
# (giant.tracking.tables) through this one table.
SETTING_TAGS: Final = {
    PROVIDER_TAG: "provider.name",
    MODEL_TAG: "provider.model",
    AGENT_MODE_TAG: "agent.mode",
    MAX_STEPS_TAG: "agent.max_steps",
    CROP_SIZE_TAG: "agent.crop_size",
    RUNS_PER_ITEM_TAG: "runs_per_item",
}
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
TRACE_TASK_TAG: Final = "task"  # the item's benchmark (MultiPathQA task)
TRACE_RUN_TAG: Final = "run_index"  # which of the item's k runs
TRACE_METHOD_TAG: Final = "method"  # the agent mode (giant, thumbnail, patch, ...)
# The trajectory folder a trace was built from, relative to the job folder: a resumed job traces the
# slots without a trace, and replaces the trace of a slot whose record now names another folder.
TRACE_TRAJECTORY_TAG: Final = "giant.trajectory"
# Assessments of a trace (giant.tracking.trace_assessments): what the code scored, under these names
EXPECTED_ASSESSMENT: Final = "expected_answer"
CORRECT_ASSESSMENT: Final = "correct"
PARSED_ASSESSMENT: Final = "parsed_answer"
FAILURE_ASSESSMENT: Final = "failure_cause"
HIT_ASSESSMENT: Final = "evidence_hit"
FINEST_MPP_ASSESSMENT: Final = "finest_mpp"
COVERAGE_ASSESSMENT: Final = "coverage"
CODE_SOURCE_ID: Final = "giant"  # the source id of the assessments giant's code logs
# A pathologist's review (scripts/review.py): the label schemas' names, which are also the names of
# the HUMAN assessments the review UI logs
REVIEW_EVIDENCE: Final = "crops_show_evidence"
REVIEW_SUPPORTED: Final = "answer_supported"
REVIEW_NOTE: Final = "review_note"

# Metrics of a sweep's parent run: its jobs, and how many of them failed or did not complete
N_JOBS_METRIC: Final = "n_jobs"
N_FAILED_METRIC: Final = "n_failed"
N_INCOMPLETE_METRIC: Final = "n_incomplete"


def tag_filter(tag: str, value: str) -> str:
    """An MLflow search clause matching one tag (backquoted: names with a dot need it)."""
    return f"tags.`{tag}` = '{value}'"
