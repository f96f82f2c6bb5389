"""A slide's annotations are read once per process: the runner's evidence, the trajectory pages'
outlines and the slides' overviews share one instance per `dataset.annotations` setting, and a
rewritten file is read again. Masks in the formats tifffile does not take (PNG) still read."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import giant.eval.annotations as annotations_module
from giant.core import Box
from giant.eval.annotation_settings import AnnotationSettings
from giant.eval.annotations import Annotations

WIDTH, HEIGHT = 4000, 3000
SLIDE = Path("/slides/case_07.svs")  # only its name is used: the annotation file is found by stem
TARGET = Box(x=1000, y=1000, w=800, h=600)


def _settings(folder: Path, **changes: object) -> AnnotationSettings:
    return AnnotationSettings.model_validate(
        {
            "path": folder,
            "targets": ["Tumor", "gleason_3"],
            "class_map": "radboud",
            "class_maps": {"radboud": {"3": "gleason_3"}},
            "slide_providers": None,
            "mask_downsample": None,
        }
        | changes
    )


def _geojson(folder: Path, box: Box) -> Path:
    ring = [[box.x, box.y], [box.right, box.y], [box.right, box.bottom], [box.x, box.bottom], [box.x, box.y]]
    feature = {
        "type": "Feature",
        "geometry": {"type": "Polygon", "coordinates": [ring]},
        "properties": {"classification": {"name": "Tumor"}},
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "case_07.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": [feature]}))
    return path


def test_one_instance_per_setting_reads_each_file_once_and_a_rewritten_file_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[Path] = []
    parse = annotations_module.geojson_polygons

    def counted(path: Path, targets: object) -> object:
        reads.append(path)
        return parse(path, targets)  # type: ignore[arg-type]

    monkeypatch.setattr(annotations_module, "geojson_polygons", counted)
    path = _geojson(tmp_path / "a", TARGET)
    runner = Annotations.of(_settings(tmp_path / "a"))
    pages = Annotations.of(_settings(tmp_path / "a"))  # the job's pages, from an equal setting
    assert runner is not None and runner is pages
    assert Annotations.of(_settings(tmp_path / "a", targets=["Other"])) is not runner

    grid = runner.target(SLIDE, WIDTH, HEIGHT)
    assert grid is not None and grid.fraction(TARGET) == 1.0
    for _ in range(3):  # each trajectory page of the slide, then its overview
        (ring,) = pages.outlines(SLIDE, WIDTH, HEIGHT)
        assert ring[0] == (TARGET.x, TARGET.y)
    assert runner.target(SLIDE, WIDTH, HEIGHT) is grid
    assert reads == [path]

    moved = Box(x=2500, y=500, w=800, h=600)
    _geojson(tmp_path / "a", moved)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    grid = runner.target(SLIDE, WIDTH, HEIGHT)
    assert grid is not None and grid.fraction(moved) == 1.0 and grid.fraction(TARGET) == 0.0
    assert pages.outlines(SLIDE, WIDTH, HEIGHT)[0][0] == (moved.x, moved.y)
    assert reads == [path, path]


def test_a_png_label_mask_reads_and_draws_its_target_area(tmp_path: Path) -> None:
    values = np.zeros((HEIGHT // 4, WIDTH // 4), dtype=np.uint8)
    values[TARGET.y // 4 : TARGET.bottom // 4, TARGET.x // 4 : TARGET.right // 4] = 3
    folder = tmp_path / "masks"
    folder.mkdir()
    Image.fromarray(values).save(folder / "case_07_mask.png")
    found = Annotations(_settings(folder))
    grid = found.target(SLIDE, WIDTH, HEIGHT)
    assert grid is not None and grid.shape == values.shape
    assert grid.fraction(TARGET) == 1.0 and grid.fraction(Box(x=0, y=0, w=800, h=800)) == 0.0
    (ring,) = found.outlines(SLIDE, WIDTH, HEIGHT)
    assert ring[0] == (TARGET.x, TARGET.y) and ring[2] == (TARGET.right, TARGET.bottom)
