"""A pathologist's review through MLflow's own API on a real sqlite store: scripts/review.py makes
the label schemas and a review queue of a sweep's traces (sampled per task, correct and incorrect);
HUMAN assessments logged as the review UI logs them come back as the reviewed evidence hit rate with
its interval, n and, where two reviewers judged the same item-runs, Cohen's kappa."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import mlflow
import pytest
from mlflow.entities import AssessmentSource, AssessmentSourceType
from mlflow.genai import label_schemas, review_queues

from giant.tracking.names import (
    PARENT_TAG,
    REVIEW_EVIDENCE,
    REVIEW_NOTE,
    REVIEW_SUPPORTED,
    ROLE_TAG,
    SWEEP_ROLE,
    TRACE_ITEM_TAG,
    TRACE_RUN_TAG,
)
from giant.tracking.review import run_traces, sample
from giant.tracking.reviewed import cohen_kappa, reviewed_rate, wilson
from giant.tracking.reviewed_table import reviewed_compare_lines, reviewed_markdown
from giant.tracking.tables.rows import RunRecord
from giant.tracking.traces import log_traces
from tests.tracking.traced import N_ITEMS, new_job

ROOT = Path(__file__).resolve().parents[2]


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("review_script", ROOT / "scripts" / "review.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _human(reviewer: str) -> AssessmentSource:
    return AssessmentSource(source_type=AssessmentSourceType.HUMAN, source_id=reviewer)


def test_a_sweep_review_queue_and_its_verdicts(
    job_dir: Path, mlflow_store: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    uri, experiment_id = mlflow_store
    client = mlflow.MlflowClient(uri)
    sweep = client.create_run(experiment_id, tags={ROLE_TAG: SWEEP_ROLE}).info.run_id
    jobs = [new_job(uri, experiment_id, {PARENT_TAG: sweep}) for _ in range(2)]
    for job in jobs:
        assert log_traces(job, job_dir) == N_ITEMS

    assert (
        _script().main([sweep, "--per-task", "2", "--ui", "http://127.0.0.1:5999", "--tracking-uri", uri])
        == 0
    )
    out = capsys.readouterr().out
    assert f"http://127.0.0.1:5999/#/experiments/{experiment_id}/review-queue" in out
    (queue,) = review_queues.list_review_queues(experiment_id=experiment_id)
    items = review_queues.list_review_queue_items(queue.queue_id)
    assert len(items) == 2  # two item-runs of the one task ("demo"), from both jobs' traces
    names = {schema.name for schema in label_schemas.list_label_schemas(experiment_id=experiment_id)}
    assert {REVIEW_EVIDENCE, REVIEW_SUPPORTED, REVIEW_NOTE} <= names  # beside MLflow's own "Feedback"
    # running it again adds nothing: the queue and its schemas are reused
    assert _script().main([sweep, "--per-task", "2", "--tracking-uri", uri]) == 0
    assert len(review_queues.list_review_queues(experiment_id=experiment_id)) == 1

    # two reviewers judge the first job's traces; they disagree on one
    traces = run_traces(client, client.get_run(jobs[0].run_id))
    verdicts = {"ana": [True, True, False], "ben": [True, False, False]}
    for reviewer, values in verdicts.items():
        for trace, value in zip(traces, values, strict=True):
            mlflow.log_feedback(
                trace_id=trace.info.trace_id, name=REVIEW_EVIDENCE, value=value, source=_human(reviewer)
            )
    rate = reviewed_rate(run_traces(client, client.get_run(jobs[0].run_id)))
    assert (rate.n, rate.hits) == (3, 1)  # the split trace is a tie: not clearly shown, a miss
    assert (rate.low, rate.high) == pytest.approx(wilson(1, 3))
    assert rate.kappa == pytest.approx(cohen_kappa(list(zip(verdicts["ana"], verdicts["ben"], strict=True))))
    assert rate.kappa_n == 3
    # the second job is not reviewed: no rate, never a zero
    unreviewed = reviewed_rate(run_traces(client, client.get_run(jobs[1].run_id)))
    assert unreviewed.n == 0 and unreviewed.text() == "not reviewed"
    records = [
        RunRecord(run_id=job.run_id, task="demo", agent_mode=mode, model="random", mean=0.5, std=0.1)
        for job, mode in zip(jobs, ("giant", "thumbnail"), strict=True)
    ]
    table = reviewed_markdown(client, records)
    assert table is not None and rate.text() in table
    assert jobs[0].run_id[:8] in table and jobs[1].run_id[:8] not in table  # only the reviewed job

    # compare: the second job reviewed on two of the same item-runs, paired with the first
    second = {
        (t.info.tags[TRACE_ITEM_TAG], t.info.tags[TRACE_RUN_TAG]): t
        for t in run_traces(client, client.get_run(jobs[1].run_id))
    }
    first_verdicts = {  # a hit where both reviewers passed it (a tie is a miss)
        (trace.info.tags[TRACE_ITEM_TAG], trace.info.tags[TRACE_RUN_TAG]): ana and ben
        for trace, ana, ben in zip(traces, verdicts["ana"], verdicts["ben"], strict=True)
    }
    shared = sorted(first_verdicts)[:2]
    for slot in shared:
        mlflow.log_feedback(
            trace_id=second[slot].info.trace_id, name=REVIEW_EVIDENCE, value=True, source=_human("ana")
        )
    lines = reviewed_compare_lines(client, [("A", "demo", jobs[0].run_id), ("B", "demo", jobs[1].run_id)])
    a_hits = sum(first_verdicts[slot] for slot in shared)
    paired = next(line for line in lines if "paired A vs B" in line)
    assert f"{a_hits}/2 vs 2/2 reviewed in both" in paired
    assert f"in the second only: {2 - a_hits}" in paired


def test_a_run_that_is_no_job_gets_one_line(
    mlflow_store: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    uri, experiment_id = mlflow_store
    other = mlflow.MlflowClient(uri).create_run(experiment_id).info.run_id
    with pytest.raises(SystemExit) as stopped:
        _script().main([other, "--tracking-uri", uri])
    assert stopped.value.code != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("review: ") and "job's or a sweep's run id" in err[0]


def test_kappa_and_the_interval_against_hand_counts() -> None:
    # 10 items: both pass 4, both fail 3, ana-only 2, ben-only 1 -> po 0.7, pe 0.5, kappa 0.4
    pairs = [(True, True)] * 4 + [(False, False)] * 3 + [(True, False)] * 2 + [(False, True)]
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    assert cohen_kappa([(True, True)] * 3) is None  # one verdict throughout: undefined
    low, high = wilson(0, 10)
    assert low == 0.0 and 0.27 < high < 0.28


def test_the_sample_is_stratified_by_correctness() -> None:
    class Info:
        def __init__(self, n: int, task: str, correct: bool) -> None:
            self.trace_id = f"tr-{task}-{n}"
            self.tags = {"task": task}
            feedback = mlflow.entities.Feedback(name="correct", value=correct)
            self.assessments = [feedback]

    class FakeTrace:
        def __init__(self, n: int, task: str, correct: bool) -> None:
            self.info = Info(n, task, correct)

    traces = [FakeTrace(n, task, n % 4 == 0) for task in ("a", "b") for n in range(12)]
    chosen = sample(traces, 4, seed=1)  # type: ignore[arg-type]
    for task in ("a", "b"):
        mine = [trace for trace in chosen if trace.info.tags["task"] == task]
        assert len(mine) == 4
        assert sum(trace.info.assessments[0].value for trace in mine) == 2
