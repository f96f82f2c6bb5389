"""The job writes report.html itself: a job of the demo data with its MLflow run in a sqlite store (the
session's demo store, tests/helpers/store.py: report.html among its artifacts), and a job run
in-process (giant.evaluate, the job scripts/run_eval.py runs) without MLflow (the page is in the job
folder all the same; the scripted provider's faults in its taxonomy)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import giant
from giant.record import TRAJECTORY_FILE, JobLayout
from giant.tracking.names import OUTPUT_DIR_TAG
from giant.wsi.slide import Slide
from tests.helpers.store import ITEMS, DemoStore


def run_job(tmp: Path, *args: str) -> Path:
    job = tmp / "job"
    overrides = ["provider=random", "agent.max_steps=3", "limit=3", f"paths.cache_dir={tmp / 'cache'}", *args]
    summary = giant.evaluate(overrides, output_dir=job)
    assert summary is not None and summary.complete
    return job


@pytest.mark.slow
def test_job_logs_report_to_mlflow(demo_store: DemoStore, tmp_path: Path) -> None:
    """A job of the session's demo store (tests/helpers/store.py), read only."""
    run = demo_store.jobs()[-1]
    layout = JobLayout(Path(run.data.tags[OUTPUT_DIR_TAG]))
    page = layout.report.read_text(encoding="utf-8")
    assert page.count("<tr data-task=") == ITEMS

    client = demo_store.client()
    names = [artifact.path for artifact in client.list_artifacts(run.info.run_id)]
    assert "report.html" in names
    logged = Path(client.download_artifacts(run.info.run_id, "report.html", str(tmp_path / "dl")))
    assert logged.read_text(encoding="utf-8").count("<tr data-task=") == ITEMS

    # the trajectory records the slide's mpp, which the report's magnification needs
    trajectory = json.loads(next(layout.trajectories.rglob(TRAJECTORY_FILE)).read_text())
    with Slide.open(trajectory["slide_path"]) as slide:
        assert slide.mpp_x is not None and trajectory["slide_mpp"] == slide.mpp_x


SCRIPT_LINES = [  # every item: a box off the slide, a reply that is no step, a crop, the answer
    {"reasoning": "far right", "action": {"type": "crop", "x": 10**7, "y": 0, "width": 100, "height": 100}},
    {"error": "parse", "message": "no JSON object in the reply", "raw_text": "<b>just prose</b>"},
    {"reasoning": "look closer", "action": {"type": "crop", "x": 0, "y": 0, "width": 800, "height": 800}},
    {"reasoning": "done", "action": {"type": "answer", "text": '<response>{"answer": 1}</response>'}},
]


@pytest.mark.slow
def test_scripted_job_without_mlflow_writes_the_report(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(line) + "\n" for line in SCRIPT_LINES))
    job = run_job(tmp_path, "tracking.enabled=false", "provider=scripted", f"provider.script={script}")
    page = JobLayout(job).report.read_text(encoding="utf-8")
    assert page.count("<tr data-task=") == 3
    # one rejected box and one unparseable reply per item, each recovered from: three answered items
    for event in ("invalid_box", "parse"):
        assert re.search(rf"<td>{event}</td><td>[^<]*</td><td class=\"n\">3</td>", page), event
    assert re.search(r'<td>answered</td><td>[^<]*</td><td class="n">3</td>', page)
    assert "&lt;b&gt;just prose&lt;/b&gt;" in page
