"""A job's traces as MLflow holds them: a small job run in-process (the random provider on real
synthetic slides), its record traced into a real sqlite store. One trace per item-run, each image the
model was sent attached to the span that sent it and stored once (a hard link to the job's copy), the
scoring as assessments; a second pass adds nothing, a replaced trajectory's trace is rebuilt, never
doubled."""

from __future__ import annotations

import os
from pathlib import Path

import mlflow
from mlflow.entities import AssessmentSourceType
from mlflow.tracing.attachments import Attachment

from giant.core import Box
from giant.record import JobLayout, latest_by_slot, read_results, read_trajectory
from giant.record.trajectory import Call, PatchesPlaced, Region, Trajectory
from giant.tracking.names import (
    CORRECT_ASSESSMENT,
    EXPECTED_ASSESSMENT,
    PARSED_ASSESSMENT,
    TRACE_ITEM_TAG,
    TRACE_METHOD_TAG,
    TRACE_RUN_TAG,
    TRACE_TASK_TAG,
    TRACE_TRAJECTORY_TAG,
)
from giant.tracking.traces import _sent_with, log_traces
from tests.tracking.traced import N_ITEMS, new_job


def _refs(value: object) -> list[str]:
    """Every attachment reference in a span's inputs or outputs."""
    if isinstance(value, str):
        return [value] if Attachment.parse_ref(value) else []
    if isinstance(value, dict):
        return [ref for item in value.values() for ref in _refs(item)]
    if isinstance(value, list):
        return [ref for item in value for ref in _refs(item)]
    return []


def test_each_item_run_is_one_trace_with_its_images_and_scoring(
    job_dir: Path, mlflow_store: tuple[str, str]
) -> None:
    uri, experiment_id = mlflow_store
    job = new_job(uri, experiment_id)
    assert log_traces(job, job_dir) == N_ITEMS

    records = latest_by_slot(read_results(JobLayout(job_dir).results))
    traces = mlflow.search_traces(locations=[experiment_id], run_id=job.run_id, return_type="list")
    assert len(traces) == N_ITEMS
    artifacts = Path(experiment_root(uri, experiment_id))
    for trace in traces:
        tags = trace.info.tags
        record = records[(tags[TRACE_ITEM_TAG], int(tags[TRACE_RUN_TAG]))]
        assert tags[TRACE_TASK_TAG] == record.benchmark and tags[TRACE_METHOD_TAG] == "giant"
        trajectory = read_trajectory(job_dir / str(record.trajectory))
        refs = [ref for span in trace.data.spans for ref in _refs(span.inputs) + _refs(span.outputs)]
        assert len(refs) == len(trajectory.regions) > 1  # the overview and the crops, one each
        assert len({ref for ref in refs}) == len(refs)
        overview = next(span for span in trace.data.spans if span.name == "call 1")
        (image,) = overview.inputs["images"]
        assert image["mpp"] == trajectory.regions[0].mpp and image["box"]["w"] == trajectory.slide_width
        # stored once: the attachment file is the job's own image
        stored = sorted(
            artifacts.rglob(f"attachments/{Attachment.parse_ref(image['image'])['attachment_id']}")
        )
        assert len(stored) == 1
        assert os.path.samefile(stored[0], job_dir / str(record.trajectory) / trajectory.regions[0].image)

        by_name = {assessment.name: assessment for assessment in trace.info.assessments}
        assert by_name[EXPECTED_ASSESSMENT].value == record.truth
        assert by_name[CORRECT_ASSESSMENT].value is record.correct
        assert by_name[PARSED_ASSESSMENT].value == record.label
        assert by_name[CORRECT_ASSESSMENT].source.source_type == AssessmentSourceType.CODE


def test_a_resumed_job_adds_no_second_trace(job_dir: Path, mlflow_store: tuple[str, str]) -> None:
    uri, experiment_id = mlflow_store
    job = new_job(uri, experiment_id)
    assert log_traces(job, job_dir) == N_ITEMS
    assert log_traces(job, job_dir) == 0
    first = mlflow.search_traces(locations=[experiment_id], run_id=job.run_id, return_type="list")
    # a slot whose trace shows an earlier attempt (a retry replaced its trajectory) is traced again,
    # the old trace deleted
    job.client.set_trace_tag(first[0].info.trace_id, TRACE_TRAJECTORY_TAG, "trajectories/an-earlier-attempt")
    assert log_traces(job, job_dir) == 1
    again = mlflow.search_traces(locations=[experiment_id], run_id=job.run_id, return_type="list")
    assert len(again) == N_ITEMS
    slots = {(t.info.tags[TRACE_ITEM_TAG], t.info.tags[TRACE_RUN_TAG]) for t in again}
    assert len(slots) == N_ITEMS
    assert first[0].info.trace_id not in {t.info.trace_id for t in again}


def experiment_root(uri: str, experiment_id: str) -> str:
    location = mlflow.MlflowClient(uri).get_experiment(experiment_id).artifact_location
    return location.removeprefix("file://")


def _region(call_index: int, name: str) -> Region:
    box = Box(x=0, y=0, w=100, h=100)
    return Region(
        call_index=call_index, requested=box, read=box, level=0, output_width=10, output_height=10, image=name
    )


def test_each_image_goes_with_the_call_that_sent_it() -> None:
    calls = [Call(index=1), Call(index=2)]
    # giant mode: the overview (0) goes with call 1, call 1's crop with call 2, call 2's crop never went
    crops = [_region(0, "overview"), _region(1, "crop1"), _region(2, "crop2")]
    giant = Trajectory(item_key="k", mode="giant", max_steps=3, crop_size=10, calls=calls, regions=crops)
    sent = {index: [r.image for r in regions] for index, regions in _sent_with(giant).items()}
    assert sent == {1: ["overview"], 2: ["crop1"], -1: ["crop2"]}
    # patch mode: each patch under the call that showed it
    placed = PatchesPlaced(requested=2, sent=2, level0_side=100, placement="fill")
    patches = [_region(1, "patch1"), _region(2, "patch2")]
    patch = Trajectory(
        item_key="k", mode="patch", max_steps=1, crop_size=10, calls=calls, regions=patches, patches=placed
    )
    sent = {index: [r.image for r in regions] for index, regions in _sent_with(patch).items()}
    assert sent == {1: ["patch1"], 2: ["patch2"]}
