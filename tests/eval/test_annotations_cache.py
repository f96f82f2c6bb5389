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


def _feature(geometry: object) -> dict[str, object]:
    return {"type": "Feature", "geometry": geometry, "properties": {"classification": {"name": "Tumor"}}}


def _polygon(ring: list[list[object]]) -> dict[str, object]:
    return {"type": "Polygon", "coordinates": [ring]}


SQUARE = [[1000, 1000], [1800, 1000], [1800, 1600], [1000, 1600], [1000, 1000]]


@pytest.mark.parametrize(
    ("geometry", "named"),
    [
        (_polygon([[str(x), str(y)] for x, y in SQUARE]), "is not two numbers [x, y]"),  # string coordinates
        (_polygon([[1000, 1000], [1400, 1300], [1800, 1600], [1000, 1000]]), "encloses no area"),  # flat ring
        ("POLYGON ((1000 1000, 1800 1000, 1800 1600))", "the geometry is a str"),  # WKT, not an object
        (_polygon([[float("nan"), 1000], *SQUARE[1:]]), "is not finite"),
        (_polygon([[1e308, 1000], *SQUARE[1:]]), "lies outside the 4000x3000 slide"),
        (
            _polygon([[x * 10, y * 10] for x, y in SQUARE]),
            "lies outside the 4000x3000 slide",
        ),  # another slide
        ({"type": "MultiPolygon", "coordinates": "[[...]]"}, "not lists of rings"),
    ],
    ids=["string_coordinates", "flat_ring", "string_geometry", "nan", "1e308", "other_slide", "multipolygon"],
)
def test_a_bad_geojson_is_one_warning_and_the_slide_is_not_annotated(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, geometry: object, named: str
) -> None:
    """Before: a ValueError/TypeError/AttributeError out of the worker (the job lost), or a silent
    grid that counted every crop as a miss. Now one warning naming the file, and no grid, no outline."""
    folder = tmp_path / "annotations"
    folder.mkdir()
    path = folder / "case_07.geojson"
    good = _feature(_polygon(SQUARE))
    path.write_text(json.dumps({"type": "FeatureCollection", "features": [good, _feature(geometry)]}))
    found = Annotations(_settings(folder))
    with caplog.at_level("WARNING", logger="giant.eval.annotations"):
        assert found.target(SLIDE, WIDTH, HEIGHT) is None
        assert found.outlines(SLIDE, WIDTH, HEIGHT) == []
        assert found.target(SLIDE, WIDTH, HEIGHT) is None  # read once: no second warning
    (record,) = caplog.records
    message = record.getMessage()
    assert named in message and str(path) in message
    assert "\n" not in message


def test_a_mask_of_another_aspect_is_one_warning_and_the_slide_is_not_annotated(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A 4:3 slide with a square mask: read, it would put the targets in the wrong places."""
    folder = tmp_path / "masks"
    folder.mkdir()
    values = np.full((1000, 1000), 3, dtype=np.uint8)
    Image.fromarray(values).save(folder / "case_07_mask.png")
    found = Annotations(_settings(folder))
    with caplog.at_level("WARNING", logger="giant.eval.annotations"):
        assert found.target(SLIDE, WIDTH, HEIGHT) is None
        assert found.outlines(SLIDE, WIDTH, HEIGHT) == []
    (record,) = caplog.records
    assert "a 1000x1000 mask does not have the 4000x3000 slide's aspect" in record.getMessage()
