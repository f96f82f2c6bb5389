"""MLflow traces of a job (`tracking.traces`, on by default): one trace per item-run, one span per
provider call and per tool call, so MLflow's Traces tab shows each trajectory step by step, with each
image the model was sent attached to the span that sent it (its µm/px and box beside it) and the
answer's scoring as assessments (giant.tracking.trace_assessments).

Traces are built after the run from the job's record (its result records and the trajectories they
name: the runner's in memory, or a job folder's read once), not during it: the agent stays free of
tracking code. A trace is written in one step, its tags and
assessments with it (so one store commit per item-run, and never a trace without its scoring), and
tagged with its trajectory folder: a resumed job traces the slots without a trace of their current
trajectory and deletes the rest, so no item-run is traced twice. Span times are laid out from each
call's recorded latency, ending when the trace is written.

Storage: MLflow writes each attachment as a file under the trace's artifacts; on a local store that
file is then replaced by a hard link to the job's own copy of the image (giant.storage), so the JPEG
bytes stay stored once.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import mlflow
from mlflow.entities import SpanType, Trace, TraceInfo
from mlflow.tracing.attachments import Attachment
from mlflow.tracing.trace_manager import InMemoryTraceManager
from mlflow.tracing.utils.artifact_utils import get_artifact_uri_for_trace

from giant.record import latest_by_slot
from giant.record.read import JobRecord, read_runs
from giant.record.results import ResultRecord
from giant.record.trajectory import Call, Region, Trajectory
from giant.secrets import scrub
from giant.storage import link_or_copy
from giant.tracking.mlflow_logger import JobRun
from giant.tracking.names import (
    SOURCE_RUN,
    TRACE_ITEM_TAG,
    TRACE_METHOD_TAG,
    TRACE_RUN_TAG,
    TRACE_STATUS_TAG,
    TRACE_TASK_TAG,
    TRACE_TRAJECTORY_TAG,
)
from giant.tracking.trace_assessments import assessments

log = logging.getLogger(__name__)

NS = 1_000_000_000
JPEG = "image/jpeg"
ATTACHMENTS_DIR = "attachments"  # MLflow's folder of a trace's attachments, under its location


@dataclass
class _Images:
    """The attachments of one trace, kept to link each stored file to the job's copy."""

    folder: Path
    sources: dict[str, Path] = field(default_factory=dict)  # attachment id -> the job's image

    def attach(self, region: Region) -> dict[str, Any]:
        source = self.folder / region.image
        attachment = Attachment(content_type=JPEG, content_bytes=source.read_bytes())
        self.sources[attachment.id] = source
        box = region.read
        return {
            "image": attachment,
            "mpp": region.mpp,
            "box": {"x": box.x, "y": box.y, "w": box.w, "h": box.h},  # level-0 pixels
            "level": region.level,
            "size": [region.output_width, region.output_height],
        }


def log_traces(job: JobRun, out_dir: Path, record: JobRecord | None = None) -> int:
    """Trace every item-run of the job in `out_dir` that has a trajectory and no complete trace;
    returns how many traces it wrote. `record`: the job's record in memory (else the folder's, read
    once)."""
    results, trajectories = (
        (record.records, record.trajectories) if record is not None else read_runs(out_dir)
    )
    records = latest_by_slot(results).values()
    mlflow.set_tracking_uri(job.settings.tracking.uri)
    experiment_id = job.client.get_run(job.run_id).info.experiment_id
    traced = _existing(job, experiment_id, records)
    written: list[tuple[str, _Images]] = []
    for line in records:
        trajectory = trajectories.get(line.slot)
        if line.trajectory is None or trajectory is None or line.slot in traced:
            continue
        images = _Images(out_dir / line.trajectory)
        written.append((_trace(trajectory, line, job, experiment_id, images), images))
    if not written:
        return 0
    flush = getattr(mlflow, "flush_trace_async_logging", None)
    if flush is not None:
        flush()
    infos = {trace.info.trace_id: trace.info for trace in _run_traces(job, experiment_id)}
    for trace_id, images in written:
        if trace_id in infos:
            _link_images(infos[trace_id], images)
    return len(written)


def _existing(job: JobRun, experiment_id: str, records: Iterable[ResultRecord]) -> set[tuple[str, int]]:
    """The slots whose current trajectory already has a trace; every other trace of the run (of a
    trajectory a retry replaced, or a second copy) is deleted, to be written again."""
    current = {record.slot: record.trajectory for record in records}
    keep: set[tuple[str, int]] = set()
    stale: list[str] = []
    for trace in _run_traces(job, experiment_id):
        tags = trace.info.tags
        slot = (tags.get(TRACE_ITEM_TAG, ""), int(tags.get(TRACE_RUN_TAG, "-1")))
        if slot not in keep and current.get(slot) == tags.get(TRACE_TRAJECTORY_TAG):
            keep.add(slot)
        else:
            stale.append(trace.info.trace_id)
    if stale:
        job.client.delete_traces(experiment_id, trace_ids=stale)
    return keep


def _run_traces(job: JobRun, experiment_id: str) -> Iterator[Trace]:
    """The job run's traces, without their spans."""
    page_token = None
    while True:
        page = job.client.search_traces(
            locations=[experiment_id], run_id=job.run_id, include_spans=False, page_token=page_token
        )
        yield from page
        page_token = page.token
        if not page_token:
            return


def _trace(
    trajectory: Trajectory, record: ResultRecord, job: JobRun, experiment_id: str, images: _Images
) -> str:
    clean = _cleaner(job)
    end_ns = time.time_ns()
    durations = [max(call.usage.latency_s, 0.001) for call in trajectory.calls]
    start_ns = end_ns - int(max(trajectory.totals.seconds, sum(durations)) * NS)
    sent = _sent_with(trajectory)
    root = mlflow.start_span_no_context(
        f"{trajectory.item_key} run {trajectory.run_index}",
        span_type=SpanType.AGENT,
        inputs={
            "question": clean(trajectory.question),
            "slide": trajectory.slide_path,
            "slide_mpp": trajectory.slide_mpp,
        },
        attributes={
            "mode": trajectory.mode,
            "T": str(trajectory.max_steps),
            "S": str(trajectory.crop_size),
        },
        tags={
            TRACE_TASK_TAG: record.benchmark,
            TRACE_ITEM_TAG: trajectory.item_key,
            TRACE_RUN_TAG: str(trajectory.run_index),
            TRACE_METHOD_TAG: trajectory.mode,
            TRACE_STATUS_TAG: trajectory.status,
            TRACE_TRAJECTORY_TAG: record.trajectory or "",
        },
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
            inputs={
                "call": call.index,
                "attempt": call.attempt,
                "images": [images.attach(region) for region in sent.pop(call.index, [])],
            },
            start_time_ns=cursor,
        )
        cursor += int(seconds * NS)
        for tool_call in (tool for tool in trajectory.tool_calls if tool.call_index == call.index):
            _tool_span(span, tool_call.model_dump(mode="json"), clean, cursor)
        span.end(
            outputs=_call_outputs(call, clean),
            attributes=_usage(call),
            status="ERROR" if call.error_kind else "OK",
            end_time_ns=cursor,
        )
    with InMemoryTraceManager.get_instance().get_trace(root.trace_id) as live:  # written with the trace
        if live is not None:
            live.info.assessments.extend(assessments(record, clean))
    unsent = [region for regions in sent.values() for region in regions]  # read, never sent (timeout)
    totals = trajectory.totals
    root.end(
        outputs={
            "answer": clean(trajectory.answer or ""),
            "status": trajectory.status,
            "correct": record.correct,
            "reason": clean(trajectory.reason),
            **({"unsent_images": [images.attach(region) for region in unsent]} if unsent else {}),
        },
        attributes={"steps": totals.steps, "crops": totals.crops, "cost_usd": totals.cost_usd},
        status="OK" if trajectory.status == "answered" else "ERROR",
        end_time_ns=max(cursor, end_ns),
    )
    return root.trace_id


def _sent_with(trajectory: Trajectory) -> dict[int, list[Region]]:
    """The images each call was sent. A crop read for call c (0: the overview) goes with the next call
    after c, and one read after the last call was never sent (key -1); patch mode records each patch
    under the call that showed it."""
    indexes = sorted(call.index for call in trajectory.calls)
    sent: dict[int, list[Region]] = {}
    for region in trajectory.regions:
        if trajectory.patches is not None:
            shown = region.call_index if region.call_index in indexes else -1
        else:
            shown = next((index for index in indexes if index > region.call_index), -1)
        sent.setdefault(shown, []).append(region)
    return sent


def _tool_span(parent: Any, record: dict[str, Any], clean: Callable[[str], str], at_ns: int) -> None:
    span = mlflow.start_span_no_context(
        f"tool {record.get('tool', '')}",
        span_type=SpanType.TOOL,
        parent_span=parent,
        inputs={"tool": record.get("tool"), "call": record.get("call_index")},
        start_time_ns=at_ns,
    )
    span.end(outputs=json.loads(clean(json.dumps(record))), end_time_ns=at_ns)


def _link_images(info: TraceInfo, images: _Images) -> None:
    """Replace the attachment files MLflow wrote on a local store by links to the job's images."""
    parsed = urlparse(get_artifact_uri_for_trace(info))
    if parsed.scheme != "file":
        return  # a server's or a cloud store: MLflow's upload is the only copy there
    folder = Path(unquote(parsed.path)) / ATTACHMENTS_DIR
    for attachment_id, source in images.sources.items():
        target = folder / attachment_id
        if target.is_file():
            link_or_copy(source, target)


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
