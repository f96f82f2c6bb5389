"""Where the runs of one slide looked, on one picture: for every slide that several item-runs looked at
(runs_per_item > 1, as the paper's x5, or several questions on one slide), a page under overviews/
with the slide's overview and every run's crop boxes on it, a colour per run, the slide's annotated
target regions' outlines under them when the job has annotations. Five runs that all zoom on the
same corner and five that scatter read apart at a glance, where five trajectory pages do not.

The overview image is the first run's JPEG, named from the page (`../trajectories/...`), never copied;
inside MLflow's artifact view the page's one script (the trajectory pages' own) asks the server for it
from that run's folder. Boxes are placed with each run's own overview geometry, so runs whose
overviews differ in size still land on the same slide coordinates.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from markupsafe import Markup

from giant import pages
from giant.pages import Link
from giant.record import OVERVIEWS_DIR, SKIPPED, JobLayout, ResultRecord
from giant.record.navigation import crop_regions, seen_mpp
from giant.record.trajectory import Region, Trajectory
from giant.report.facts import ItemRun, JobFacts
from giant.tracking.viewer import COLOURS, MLFLOW_IMAGES, Outlines
from giant.wsi.magnification import mpp_text

OVERVIEW_PAGE = "overview.html"  # the template


@dataclass(frozen=True)
class SlideRuns:
    """The item-runs that looked at one slide, by item and run index (a run keeps its colour)."""

    slide: str  # the slide's path as the trajectories recorded it
    runs: list[ItemRun]

    @property
    def name(self) -> str:
        return PurePosixPath(self.slide.replace("\\", "/")).name


def slides_with_runs(runs: Sequence[ItemRun]) -> list[SlideRuns]:
    """Each slide with an overview that two or more item-runs looked at."""
    by_slide: dict[str, list[ItemRun]] = defaultdict(list)
    for run in runs:
        traj = run.trajectory
        if traj is not None and run.record.trajectory and _overview(traj) is not None:
            by_slide[traj.slide_path].append(run)
    return [
        SlideRuns(slide, sorted(found, key=lambda run: (run.record.key, run.record.run_index)))
        for slide, found in by_slide.items()
        if len(found) > 1
    ]


def write_overviews(
    facts: JobFacts,
    outlines: Callable[[Trajectory], Outlines] | None = None,
    mlflow_run_id: str | None = None,
) -> list[tuple[Link, int, int]]:
    """overviews/<slide>.html for each slide several item-runs looked at (stale pages of an earlier
    write are removed); `mlflow_run_id` the run the job folder is logged to (the image then loads in
    MLflow's artifact view too). Returns each page's link (relative to the job folder), runs and crops."""
    folder = facts.layout.overviews
    if folder.is_dir():
        for old in folder.glob("*.html"):
            old.unlink()
    groups = slides_with_runs(facts.runs)
    if not groups:
        return []
    folder.mkdir(exist_ok=True)
    written: list[tuple[Link, int, int]] = []
    used: set[str] = set()
    for group in groups:
        name = _page_name(group.name, used)
        first = group.runs[0].trajectory
        assert first is not None
        rings = outlines(first) if outlines else ()
        context = _context(facts.layout, group, rings) | {"mlflow_run_id": mlflow_run_id}
        (folder / name).write_text(pages.render(OVERVIEW_PAGE, **context), encoding="utf-8")
        crops = sum(len(run["boxes"]) for run in context["runs"])
        written.append((Link(group.name, f"{OVERVIEWS_DIR}/{name}"), len(group.runs), crops))
    return written


def _page_name(slide: str, used: set[str]) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", slide.split(".")[0]) or "slide"
    name, n = f"{stem}.html", 1
    while name in used:
        n += 1
        name = f"{stem}-{n}.html"
    used.add(name)
    return name


def _overview(traj: Trajectory) -> Region | None:
    """The picture the trajectory's boxes are drawn on: the step-0 overview, or patch mode's map."""
    if traj.patches is not None:
        return traj.patches.map
    return next((r for r in traj.regions if r.call_index == 0), None)


def _verdict(record: ResultRecord) -> str:
    if record.status == SKIPPED:
        return "not scored"
    return "correct" if record.correct else "incorrect"


def _context(layout: JobLayout, group: SlideRuns, outlines: Outlines) -> dict[str, Any]:
    """The page's data: the first run's overview, each run's boxes in its pixels, the outlines."""
    base_run = group.runs[0]
    base = _overview(base_run.trajectory) if base_run.trajectory else None
    assert base is not None and base_run.record.trajectory
    width, height = base.output_width, base.output_height
    sx, sy = width / max(base.read.w, 1), height / max(base.read.h, 1)

    def place(x: float, y: float) -> tuple[float, float]:
        return (x - base.read.x) * sx, (y - base.read.y) * sy

    runs = []
    for n, run in enumerate(group.runs):
        traj = run.trajectory
        assert traj is not None
        crops = crop_regions(traj)
        boxes = []
        for number, region in enumerate(crops, 1):
            x, y = place(region.read.x, region.read.y)
            boxes.append(
                {
                    "number": number,
                    "x": x,
                    "y": y,
                    "w": max(region.read.w * sx, 1.0),
                    "h": max(region.read.h * sy, 1.0),
                    "title": f"{region.read!s}, {mpp_text(seen_mpp(traj, region))}",
                }
            )
        record = run.record
        runs.append(
            {
                "label": f"{record.key} #{record.run_index}",
                "href": f"../{run.page}" if run.page else None,
                "colour": COLOURS[n % len(COLOURS)],
                "boxes": boxes,
                "verdict": _verdict(record),
                "hit": None if record.navigation is None else record.navigation.hit,
            }
        )
    image = Path(base.image).name
    folder = layout.out_dir / base_run.record.trajectory
    return {
        "title": f"{group.name}: {len(group.runs)} runs",
        "slide": group.slide,
        "image": image if (folder / image).is_file() else None,
        "src": f"../{base_run.record.trajectory}/{image}",
        "artifact_dir": base_run.record.trajectory,
        "width": width,
        "height": height,
        "font": max(10, round(0.025 * min(width, height))),
        "outlines": [" ".join("{:.1f},{:.1f}".format(*place(x, y)) for x, y in ring) for ring in outlines],
        "runs": runs,
        "overview_mpp": mpp_text(base.mpp),
        "script": Markup(MLFLOW_IMAGES),  # giant's own fixed script, the page's only one
    }
