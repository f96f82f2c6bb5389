"""A job whose annotation folder holds a bad GeoJSON file (a string geometry, as a hand edit leaves it):
before, the worker raised AttributeError and the job was lost (results.jsonl empty, no report), and a
resumed job dropped report.html. Now one warning naming the file, and the job ends with its results
and pages, on the first run and on the resume."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

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


def _bad_annotations(folder: Path) -> Annotations:
    folder.mkdir(parents=True)
    feature = {
        "type": "Feature",
        "geometry": "POLYGON ((600 400, 1200 400, 1200 900, 600 400))",
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
    found = Annotations(settings)  # not the shared instance: each run reads (and warns) afresh
    return found


def _job(root: Path, out: Path, resume_from: Path | None = None) -> list[dict[str, object]]:
    notes = _bad_annotations(root / f"annotations_{len(list(root.glob('annotations_*')))}")
    provider = build_provider(provider_settings("random", seed=7))
    asyncio.run(
        run_eval(
            JobData(make_items(len(SLIDES), SLIDES), root / "wsi", "da7a"),
            RunServices(provider, annotations=notes, progress_bar=False),
            agent=AGENT,
            run=shipped(RunOptions, runs_per_item=1, concurrency=2),
            out_dir=out,
            config_hash="c0ffee",
            resume_from=resume_from,
        )
    )

    def outlines(traj: Trajectory) -> Outlines:
        return notes.outlines(Path(traj.slide_path), traj.slide_width, traj.slide_height)

    write_job_pages(out, outlines=outlines)
    write_report(out, outlines)
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_a_bad_geojson_is_one_warning_and_the_job_ends_with_its_results_and_report(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_slides(tmp_path / "wsi", SLIDES)
    out = tmp_path / "job"
    with caplog.at_level(logging.WARNING, logger="giant.eval.annotations"):
        first = _job(tmp_path, out)
    assert len(first) == len(SLIDES) and all(row["status"] == "answered" for row in first)
    assert (out / "report.html").is_file()
    warned = [r.getMessage() for r in caplog.records if r.name == "giant.eval.annotations"]
    assert len(warned) == 1 and "the geometry is a str" in warned[0], warned
    caplog.clear()
    resumed = tmp_path / "resumed"
    with caplog.at_level(logging.WARNING, logger="giant.eval.annotations"):
        again = _job(tmp_path, resumed, resume_from=out)  # every item-run kept, the pages written again
    assert [row["key"] for row in again] == [row["key"] for row in first]
    assert (resumed / "report.html").is_file()
