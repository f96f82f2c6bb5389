"""A pathologist's review of a run in MLflow's own review UI (scripts/review.py).

The questions are MLflow label schemas on the experiment, made once and reused: did the crops show
the evidence for the answer (pass/fail; a reviewer may also judge a crop on the span that sent it),
is the answer supported by what the model saw (pass/fail), and a free-text note. The traces to review
go into a review queue: all of the run's (a job's run, or every job of a sweep's parent run), or a
sample of n item-runs per task, half correct and half not where both exist, so a reviewer's time is
spent on both kinds. The reviewer's verdicts come back as HUMAN assessments (giant.tracking.reviewed).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import mlflow
from mlflow import MlflowClient
from mlflow.entities import Run, Trace
from mlflow.genai import label_schemas, review_queues
from mlflow.genai.label_schemas import InputPassFail, InputText

from giant.errors import ConfigError
from giant.tracking.names import (
    CORRECT_ASSESSMENT,
    JOB_ROLE,
    PARENT_TAG,
    REVIEW_EVIDENCE,
    REVIEW_NOTE,
    REVIEW_SUPPORTED,
    ROLE_TAG,
    SWEEP_ROLE,
    TRACE_TASK_TAG,
    tag_filter,
)

QUESTIONS: dict[str, tuple[InputPassFail | InputText, str]] = {
    REVIEW_EVIDENCE: (
        InputPassFail(positive_label="Evidence shown", negative_label="Not shown"),
        "Did the crops show the evidence for the answer? Open the spans to see each image the model "
        "was sent; say in the comment which crops did.",
    ),
    REVIEW_SUPPORTED: (
        InputPassFail(positive_label="Supported", negative_label="Not supported"),
        "Is the answer supported by what the model saw?",
    ),
    REVIEW_NOTE: (InputText(), "Anything else a reader of the results should know (optional)."),
}


@dataclass(frozen=True)
class Review:
    """A review queue made for a run: which queue, which experiment, the traces it holds."""

    queue_id: str
    queue_name: str
    experiment_id: str
    trace_ids: list[str]
    jobs: int


def job_runs(client: MlflowClient, run_id: str) -> list[Run]:
    """The job runs under `run_id`: itself for a job's run, its jobs for a sweep's parent run."""
    try:
        run = client.get_run(run_id)
    except mlflow.exceptions.MlflowException:
        raise ConfigError(f"no MLflow run {run_id} in this store; pass a job's or a sweep's run id") from None
    role = run.data.tags.get(ROLE_TAG)
    if role == JOB_ROLE:
        return [run]
    if role == SWEEP_ROLE:
        where = f"{tag_filter(PARENT_TAG, run_id)} and {tag_filter(ROLE_TAG, JOB_ROLE)}"
        return list(client.search_runs([run.info.experiment_id], where))
    raise ConfigError(f"run {run_id} is a {role or 'non-giant'} run; pass a job's or a sweep's run id")


def run_traces(client: MlflowClient, run: Run) -> list[Trace]:
    """A job run's traces (their tags and assessments, not their spans)."""
    found: list[Trace] = []
    page_token = None
    while True:
        page = client.search_traces(
            locations=[run.info.experiment_id],
            run_id=run.info.run_id,
            include_spans=False,
            page_token=page_token,
        )
        found += page
        page_token = page.token
        if not page_token:
            return found


def sample(traces: Sequence[Trace], per_task: int | None, seed: int = 0) -> list[Trace]:
    """`per_task` item-runs of each task, half correct and half incorrect where both exist (the rest
    from the other kind when one runs short); all of them when `per_task` is None."""
    if per_task is None:
        return list(traces)
    rng = random.Random(seed)
    strata: dict[str, dict[bool, list[Trace]]] = defaultdict(lambda: {True: [], False: []})
    for trace in sorted(traces, key=lambda trace: trace.info.trace_id):
        strata[trace.info.tags.get(TRACE_TASK_TAG, "")][_correct(trace)].append(trace)
    chosen: list[Trace] = []
    for task in sorted(strata):
        right, wrong = (rng.sample(group, len(group)) for group in (strata[task][True], strata[task][False]))
        take_right = min(len(right), max(per_task - len(wrong), per_task // 2))
        take_wrong = min(len(wrong), per_task - take_right)
        chosen += right[:take_right] + wrong[:take_wrong]
    return chosen


def open_review(
    client: MlflowClient,
    run_id: str,
    *,
    per_task: int | None = None,
    seed: int = 0,
    name: str | None = None,
    reviewers: Sequence[str] = (),
) -> Review:
    """The label schemas and a review queue of the run's traces (sampled); an existing queue of the
    same name gets the traces added (adding twice changes nothing)."""
    runs = job_runs(client, run_id)
    if not runs:
        raise ConfigError(f"sweep run {run_id} has no job runs yet; review it once a job has finished")
    experiment_id = runs[0].info.experiment_id
    traces = [trace for run in runs for trace in run_traces(client, run)]
    if not traces:
        raise ConfigError(
            f"run {run_id} has no traces; jobs trace with tracking.traces=true (the default), and a job "
            "run before it is traced by running the same command again (it resumes; nothing is sent again)"
        )
    mlflow.set_tracking_uri(client.tracking_uri)
    schema_ids = [_schema(experiment_id, question) for question in QUESTIONS]
    queue_name = name or f"giant-{run_id[:8]}"
    queue = next(
        (queue for queue in _queues(experiment_id) if queue.name == queue_name), None
    ) or review_queues.create_review_queue(
        queue_name,
        queue_type="custom",
        users=list(reviewers),
        schema_ids=schema_ids,
        experiment_id=experiment_id,
    )
    chosen = [trace.info.trace_id for trace in sample(traces, per_task, seed)]
    review_queues.add_items_to_review_queue(queue.queue_id, item_ids=chosen)
    return Review(queue.queue_id, queue_name, experiment_id, chosen, len(runs))


def review_address(ui: str, experiment_id: str) -> str:
    """Where the reviewer works in MLflow's UI: the experiment's review queues."""
    return f"{ui.rstrip('/')}/#/experiments/{experiment_id}/review-queue"


def _schema(experiment_id: str, name: str) -> str:
    try:
        found = label_schemas.get_label_schema(name, experiment_id=experiment_id)
    except mlflow.exceptions.MlflowException:
        widget, instruction = QUESTIONS[name]
        found = label_schemas.create_label_schema(
            name,
            type="feedback",
            input=widget,
            instruction=instruction,
            enable_comment=True,
            experiment_id=experiment_id,
        )
    assert found.schema_id is not None  # the tracking store always sets it
    return found.schema_id


def _queues(experiment_id: str) -> list[review_queues.ReviewQueue]:
    found: list[review_queues.ReviewQueue] = []
    page_token = None
    while True:
        page = review_queues.list_review_queues(experiment_id=experiment_id, page_token=page_token)
        found += page
        page_token = page.token
        if not page_token:
            return found


def _correct(trace: Trace) -> bool:
    return any(
        assessment.name == CORRECT_ASSESSMENT and bool(getattr(assessment, "value", False))
        for assessment in trace.info.assessments
    )
