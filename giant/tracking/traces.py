"""Optional MLflow traces (`tracking.traces=true`): one trace per item-run, one span per provider call,
so the MLflow UI's Traces tab shows each trajectory (reasoning, action, tokens, cost) step by step.

Traces are built after the run from the saved trajectories, not during it: the agent stays free of
tracking code, and a resumed run traces exactly what its results hold. Span times are laid out
from each call's recorded latency, ending when the trace is written.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mlflow
from mlflow.entities import SpanType

from giant.record import JobLayout, has_trajectory, latest_by_slot, read_results, read_trajectory
from giant.record.trajectory import Call, Trajectory
from giant.secrets import scrub
from giant.tracking.mlflow_logger import JobRun
from giant.tracking.names import SOURCE_RUN, TRACE_ITEM_TAG, TRACE_STATUS_TAG

log = logging.getLogger(__name__)

NS = 1_000_000_000


def log_traces(job: JobRun, out_dir: Path) -> int:
    """Write a trace for every item-run of the job that has a trajectory; returns how many."""
    records = latest_by_slot(read_results(JobLayout(out_dir).results)).values()
    mlflow.set_tracking_uri(job.settings.tracking.uri)
    experiment_id = job.client.get_run(job.run_id).info.experiment_id
    count = 0
    for record in records:
        folder = out_dir / record.trajectory if record.trajectory else None
        if folder is None or not has_trajectory(folder):
            continue
        trajectory = read_trajectory(folder)
        _trace(trajectory, job, experiment_id, correct=record.correct)
        count += 1
    flush = getattr(mlflow, "flush_trace_async_logging", None)
    if flush is not None:
        flush()
    return count


def _trace(trajectory: Trajectory, job: JobRun, experiment_id: str, *, correct: bool) -> None:
    clean = _cleaner(job)
    end_ns = time.time_ns()
    durations = [max(call.usage.latency_s, 0.001) for call in trajectory.calls]
    start_ns = end_ns - int(max(trajectory.totals.seconds, sum(durations)) * NS)
    root = mlflow.start_span_no_context(
        f"{trajectory.item_key} run {trajectory.run_index}",
        span_type=SpanType.AGENT,
        inputs={"question": clean(trajectory.question), "slide": trajectory.slide_path},
        attributes={"mode": trajectory.mode, "T": str(trajectory.max_steps), "S": str(trajectory.crop_size)},
        tags={TRACE_ITEM_TAG: trajectory.item_key, TRACE_STATUS_TAG: trajectory.status},
        metadata={SOURCE_RUN: job.run_id},
        experiment_id=experiment_id,
        start_time_ns=start_ns,
    )
    cursor = start_ns
    for call, seconds in zip(trajectory.calls, durations, strict=True):
        span = mlflow.start_span_no_context(
            f"call {call.index}",
            span_type=SpanType.LLM,
            parent_span=root,
            inputs={"call": call.index, "attempt": call.attempt},
            start_time_ns=cursor,
        )
        cursor += int(seconds * NS)
        span.end(
            outputs=_call_outputs(call, clean),
            attributes=_usage(call),
            status="ERROR" if call.error_kind else "OK",
            end_time_ns=cursor,
        )
    totals = trajectory.totals
    root.end(
        outputs={
            "answer": clean(trajectory.answer or ""),
            "status": trajectory.status,
            "correct": correct,
            "reason": clean(trajectory.reason),
        },
        attributes={"steps": totals.steps, "crops": totals.crops, "cost_usd": totals.cost_usd},
        status="OK" if trajectory.status == "answered" else "ERROR",
        end_time_ns=max(cursor, end_ns),
    )


def _cleaner(job: JobRun) -> Callable[[str], str]:
    return lambda text: scrub(text, job.secrets)


def _call_outputs(call: Call, clean: Callable[[str], str]) -> dict[str, Any]:
    if call.error_kind:
        return {"error_kind": call.error_kind, "error": clean(call.error or ""), "feedback": call.feedback}
    return {
        "steps": [
            {"reasoning": clean(step.reasoning), "action": json.loads(clean(step.action.model_dump_json()))}
            for step in call.steps
        ],
        "feedback": call.feedback,
    }


def _usage(call: Call) -> dict[str, Any]:
    usage = call.usage
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
        "cost_usd": usage.cost_usd,
        "latency_s": usage.latency_s,
    }
