"""A job whose slides were each looked at several times (runs_per_item=3, the random provider's
crops), with a QuPath GeoJSON annotation for one slide: the overviews' tests and their browser test."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from giant.config import RunOptions, shipped
from giant.eval.annotation_settings import AnnotationSettings
from giant.eval.annotations import Annotations
from giant.eval.items import JobData
from giant.eval.runner import RunServices, run_eval
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.record.trajectory import Trajectory
from giant.report import write_report
from giant.tracking.viewer import Outlines, write_job_pages
from tests.eval.runner_fixtures import AGENT, SLIDES, make_items, write_slides

RUNS = 3
TARGET = [[600.0, 400.0], [1200.0, 400.0], [1200.0, 900.0], [600.0, 400.0]]  # on SLIDES[0] only


def annotations(folder: Path) -> Annotations:
    folder.mkdir(parents=True, exist_ok=True)
    feature = {
        "type": "Feature",
        "geometry": {"type": "Polygon", "coordinates": [TARGET]},
        "properties": {"classification": {"name": "Tumor"}},
    }
    stem = SLIDES[0].split(".")[0]
    (folder / f"{stem}.geojson").write_text(json.dumps({"type": "FeatureCollection", "features": [feature]}))
    settings = AnnotationSettings(
        path=folder,
        targets=["Tumor"],
        class_map="none",
        class_maps={"none": {}},
        slide_providers=None,
        mask_downsample=None,
    )
    found = Annotations.of(settings)
    assert found is not None
    return found


def overview_job(root: Path) -> Path:
    """Two items on two slides, each run RUNS times; the pages and the report written as a job does."""
    wsi_root = write_slides(root / "wsi", SLIDES)
    notes = annotations(root / "annotations")
    out = root / "job"
    run = shipped(RunOptions, runs_per_item=RUNS, concurrency=3)
    provider = build_provider(provider_settings("random", seed=7))
    job = run_eval(
        JobData(make_items(len(SLIDES), SLIDES), wsi_root, "da7a"),
        RunServices(provider, annotations=notes, progress_bar=False),
        agent=AGENT,
        run=run,
        out_dir=out,
        config_hash="c0ffee",
    )
    with ThreadPoolExecutor(1) as pool:  # a thread of its own: Playwright's sync API keeps a loop here
        pool.submit(asyncio.run, job).result()

    def outlines(traj: Trajectory) -> Outlines:
        return notes.outlines(Path(traj.slide_path), traj.slide_width, traj.slide_height)

    write_job_pages(out, outlines=outlines)
    write_report(out, outlines)
    return out
