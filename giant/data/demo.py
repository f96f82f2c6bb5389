"""The demo benchmark: synthetic slides whose answers need zooming in, its questions a task file
(giant.data.custom: the format's example, questions.csv) and the same rows in the MultiPathQA CSV format
(demo.csv, for `dataset.csv_path`). Both load into the same items, so the demo's dataset hash and ledger
keys are those of the MultiPathQA-format demo before the task format existed.

It lets `make demo` (and CI) run the whole pipeline on real pyramidal files without 500 GB of WSIs:
small dark-green markers (about 8 px in a 1000 px overview, 24 px at level 0) are painted at seeded
positions, so a model that only looks at the overview cannot tell their shape or reliably count them.
Two tasks share the slides, as MultiPathQA's tasks share TCGA slides:
- demo_shapes (accuracy): which of 4 marker shapes is on the slide (the bare-question VQA form);
- demo_count (balanced accuracy): how many markers there are, 1..4 (the template form, no options).
"""

from __future__ import annotations

import ast
import csv
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from giant.core import Box
from giant.data.custom import COLUMNS
from giant.data.multipathqa import CSV_COLUMNS
from giant.data.prompts import is_template
from giant.wsi.synthetic import Finding, Shape, write_synthetic_slide

DEMO_VERSION = 2  # bump when the generator changes: a new version builds into a new folder
WIDTH, HEIGHT = 3200, 2400
TASK_FILE = "questions.csv"  # the demo's questions in the task format (docs/custom_tasks.md)
MARKER = 24  # level-0 side of a marker
MARGIN = 160  # markers stay this far from the slide edge
QUALITY = 60  # JPEG quality of the slide tiles: the demo needs legible markers, not fine texture
SHAPES: tuple[Shape, ...] = ("circle", "square", "triangle", "cross")
# (shape, count) per slide: every shape and every count twice, so neither predicts the other.
SLIDES: tuple[tuple[Shape, int], ...] = (
    ("circle", 1),
    ("square", 3),
    ("triangle", 2),
    ("cross", 4),
    ("circle", 4),
    ("square", 2),
    ("triangle", 3),
    ("cross", 1),
)
SHAPE_QUESTION = (
    "Small dark green markers have been painted onto this slide; all of them have the same shape. "
    "Which marker shape is present on the slide?"
)
COUNT_PROMPT = (
    "Small dark green markers have been painted onto this slide. They are tiny, so zoom in to find "
    "them all. How many markers are there on the slide?\n\n"
    "Respond with the count in the following JSON format:\n"
    "```json\n"
    '{{"answer": COUNT}}\n'
    "```\n"
)


ANNOTATION_CLASS = "target"  # the class of the markers' GeoJSON polygons (dataset.annotations.targets)


class DemoPaths(BaseModel):
    csv_path: Path  # the MultiPathQA format
    wsi_root: Path
    task_file: Path  # the task format (giant.data.custom): what dataset=demo loads
    annotations: Path  # <slide stem>.geojson: each slide's markers as QuPath would export them


def build_demo(cache_dir: Path) -> DemoPaths:
    """Build once into cache_dir/demo-v<N> (a few seconds); later calls reuse it. The set is built in
    a temporary folder and renamed into place, so an interrupted build never looks complete."""
    target = Path(cache_dir) / f"demo-v{DEMO_VERSION}"
    paths = DemoPaths(
        csv_path=target / "demo.csv",
        wsi_root=target / "slides",
        task_file=target / TASK_FILE,
        annotations=target / "annotations",
    )
    if target.is_dir():
        _write_annotations(paths.annotations)  # a set built before the demo had them gets them now
        return paths
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".demo-v{DEMO_VERSION}-", dir=target.parent))
    try:
        _write_demo(staging)
        _write_annotations(staging / "annotations")
        os.replace(staging, target)
    except OSError:
        if not target.is_dir():  # another process may have finished first; otherwise it is a real error
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return paths


def _write_demo(folder: Path) -> None:
    rows = []
    for index, (shape, count) in enumerate(SLIDES, start=1):
        name = f"demo_{index:02d}.svs"
        write_synthetic_slide(
            folder / "slides" / name,
            WIDTH,
            HEIGHT,
            seed=index,
            findings=markers(index, shape, count),
            quality=QUALITY,
        )
        rows.append(
            _row("demo_shapes", index, name, str(SHAPES.index(shape) + 1), SHAPES, "accuracy", SHAPE_QUESTION)
        )
        rows.append(_row("demo_count", index, name, str(count), (), "balanced_accuracy", COUNT_PROMPT))
    rows.sort(key=lambda r: r["benchmark_name"])
    with (folder / "demo.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    with (folder / TASK_FILE).open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(_task_row(row) for row in rows)


def _task_row(row: dict[str, str]) -> dict[str, str]:
    """A MultiPathQA-format row in the task format: the bare question (the shapes) is wrapped by the
    loader as MultiPathQA wraps it; the count question asks for its JSON itself and is sent as written."""
    options = ast.literal_eval(row["options"]) if row["options"] else []
    return {
        "slide": row["image_path"],
        "question": row["prompt"].format() if is_template(row["prompt"]) else row["prompt"],
        "options": json.dumps(options) if options else "",
        "answer": row["answer"],
        "id": row["benchmark_id"],
        "task": row["benchmark_name"],
        "metric": row["metric_type"],
    }


def _write_annotations(folder: Path) -> None:
    """Each slide's markers as a GeoJSON FeatureCollection (level-0 px), written once per file."""
    folder.mkdir(parents=True, exist_ok=True)
    for index, (shape, count) in enumerate(SLIDES, start=1):
        path = folder / f"demo_{index:02d}.geojson"
        if not path.is_file():  # written beside, then renamed: a reader never sees half a file
            part = path.with_suffix(f".{os.getpid()}.part")
            part.write_text(json.dumps(geojson(markers(index, shape, count))), encoding="utf-8")
            os.replace(part, path)


def geojson(findings: list[Finding], name: str = ANNOTATION_CLASS) -> dict[str, object]:
    """Findings' boxes as QuPath exports annotations: polygons with a classification name."""
    return {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "geometry": {
                    "type": "Polygon",
                    "coordinates": [
                        [
                            [f.box.x, f.box.y],
                            [f.box.right, f.box.y],
                            [f.box.right, f.box.bottom],
                            [f.box.x, f.box.bottom],
                            [f.box.x, f.box.y],
                        ]
                    ],
                },
                "properties": {"objectType": "annotation", "classification": {"name": name}},
            }
            for f in findings
        ],
    }


def markers(seed: int, shape: Shape, count: int) -> list[Finding]:
    """Seeded positions, at least 8 marker sides apart so that each one is a separate thing to find."""
    rng = np.random.default_rng(1000 + seed)
    boxes: list[Box] = []
    while len(boxes) < count:
        x = int(rng.integers(MARGIN, WIDTH - MARGIN - MARKER))
        y = int(rng.integers(MARGIN, HEIGHT - MARGIN - MARKER))
        if all(abs(x - b.x) > 8 * MARKER or abs(y - b.y) > 8 * MARKER for b in boxes):
            boxes.append(Box(x=x, y=y, w=MARKER, h=MARKER))
    return [Finding(box=box, shape=shape) for box in boxes]


def _row(
    benchmark: str, index: int, image: str, answer: str, options: tuple[str, ...], metric: str, prompt: str
) -> dict[str, str]:
    return {
        "benchmark_name": benchmark,
        "benchmark_id": str(index),
        "image_path": image,
        "answer": answer,
        "options": repr(list(options)) if options else "",
        "image_exists": "True",
        "patch_exists": "True",
        "is_valid": "True",
        "metric_type": metric,
        "file_id": image,
        "prompt": prompt,
    }
