"""Where the model looked, as numbers: the formulas behind each item-run's `Navigation` record (the
record itself lives with the trajectory that holds it, giant.record.trajectory).

Every region shown after the overview is a crop (random_regions' sampled boxes and patch mode's patches
included). A crop's `mpp` is the microns per pixel of the image the model saw: the slide's level-0 mpp
times the read box's long side over the image's long side (0.25 is 40x, 1.0 is 10x). The record is made
while the slide is open (the tissue grid is the episode's own, giant.wsi.tissue.CropTissue) and again by
a re-score from the trajectory; evidence (`hit`, ...) needs a target grid from the slide's annotations
(giant.wsi.annotations). docs/navigation.md gives every formula in words.
"""

from __future__ import annotations

import itertools
import statistics
from typing import Protocol

import numpy as np

from giant.core import Box
from giant.record.trajectory import Navigation, Region, Trajectory

FINE_MPP = 1.0  # "first step at or finer than 1 µm/px" (about 10x): the fixed depth
# Two crops' scales are "the same" within this relative tolerance (rounding of read boxes).
SAME_SCALE = 1e-6


class Thresholds(Protocol):
    """How navigation is measured: the run's `navigation` settings (giant.eval.scoring_settings)."""

    @property
    def coverage_mpp(self) -> float: ...  # coverage counts crops at or finer than this µm/px

    @property
    def hit_mpp(self) -> float: ...  # a crop can be a hit only at or finer than this µm/px

    @property
    def hit_overlap(self) -> float: ...  # on target: this share of the crop's area is a target class


class Grid(Protocol):
    """A boolean grid over a slide's level-0 area (tissue, or an annotation's target classes)."""

    width: int
    height: int

    def fraction(self, box: Box) -> float: ...

    def cells(self) -> np.ndarray: ...


def crop_regions(traj: Trajectory) -> list[Region]:
    """Every region but the step-0 overview: the model's zooms (and random_regions' sampled boxes)."""
    overview = next((r for r in traj.regions if r.call_index == 0), None)
    return [region for region in traj.regions if region is not overview]


def scale(region: Region) -> float | None:
    """Level-0 pixels per pixel of the image sent (the slide-independent part of `seen_mpp`)."""
    side = max(region.output_width, region.output_height)
    return max(region.read.w, region.read.h) / side if side else None


def seen_mpp(traj: Trajectory, region: Region) -> float | None:
    """Microns per pixel of the image sent: as the episode recorded it, else (a trajectory written
    before regions recorded it) level-0 microns across the box over its pixels."""
    if region.mpp is not None:
        return region.mpp
    factor = scale(region)
    return None if traj.slide_mpp is None or factor is None else traj.slide_mpp * factor


def navigation(
    traj: Trajectory, tissue: Grid | None, settings: Thresholds, target: Grid | None = None
) -> Navigation:
    """The item-run's record; `tissue` the slide's tissue grid (None: coverage unknown), `target` its
    annotations' target grid (None: not annotated)."""
    crops = crop_regions(traj)
    mpps = [seen_mpp(traj, r) for r in crops]
    known = [m for m in mpps if m is not None]
    fractions = [r.tissue_fraction for r in crops if r.tissue_fraction is not None]
    if tissue is not None and any(r.tissue_fraction is None for r in crops):
        fractions = [tissue.fraction(r.read) for r in crops]
    fine = next((n for n, m in enumerate(mpps, 1) if m is not None and m <= FINE_MPP), None)
    record = Navigation(
        steps=traj.totals.steps,
        crops=len(crops),
        finest_mpp=min(known) if known else None,
        median_mpp=statistics.median(known) if known else None,
        tissue=statistics.fmean(fractions) if fractions else None,
        coverage=coverage(crops, mpps, tissue, settings.coverage_mpp),
        coverage_mpp=settings.coverage_mpp,
        revisits=revisits(crops),
        first_fine_step=fine,
        crop_mpp=mpps,
    )
    return record if target is None else with_evidence(record, traj, target, settings)


def with_evidence(record: Navigation, traj: Trajectory, target: Grid, settings: Thresholds) -> Navigation:
    """`record` with its hit, first hit step, share on target and hits by step against `target`."""
    crops = crop_regions(traj)
    on = [target.fraction(r.read) >= settings.hit_overlap for r in crops]
    hits = [
        o and (m := seen_mpp(traj, r)) is not None and m <= settings.hit_mpp
        for o, r in zip(on, crops, strict=True)
    ]
    first = next((n for n, h in enumerate(hits, 1) if h), None)
    return record.model_copy(
        update={
            "hit": first is not None,
            "first_hit_step": first,
            "on_target": sum(on) / len(on) if on else None,
            "hit_steps": [first is not None and n >= first for n in range(1, len(hits) + 1)],
        }
    )


def coverage(
    crops: list[Region], mpps: list[float | None], tissue: Grid | None, limit: float
) -> float | None:
    """Tissue cells whose centre lies in a crop at or finer than `limit` µm/px, over all tissue cells."""
    if not crops:
        return 0.0
    if tissue is None or all(m is None for m in mpps):
        return None
    cells = tissue.cells()
    total = int(np.count_nonzero(cells))
    if not total:
        return None
    rows, cols = cells.shape
    shown = np.zeros_like(cells, dtype=bool)
    for region, mpp in zip(crops, mpps, strict=True):
        if mpp is None or mpp > limit:
            continue
        box = region.read
        # cell c covers [c, c+1) * extent / cells; its centre (c + 0.5) * extent / cells lies in the box
        x0, x1 = _centres(box.x, box.right, tissue.width, cols)
        y0, y1 = _centres(box.y, box.bottom, tissue.height, rows)
        shown[y0:y1, x0:x1] = True
    return float(np.count_nonzero(shown & cells)) / total


def _centres(lo: int, hi: int, extent: int, cells: int) -> tuple[int, int]:
    """The cells whose centres lie in level-0 [lo, hi)."""
    a = max(0, int(np.ceil(lo * cells / extent - 0.5)))
    b = min(cells, int(np.ceil(hi * cells / extent - 0.5)))
    return a, max(a, b)


def revisits(crops: list[Region]) -> float | None:
    """Area of each crop already shown by an earlier crop at the same or finer scale, summed over the
    crops, over their summed area (exact: the boxes' union on their own coordinates)."""
    if not crops:
        return None
    seen = 0
    total = 0
    for i, region in enumerate(crops):
        box, own = region.read, scale(region)
        total += box.w * box.h
        earlier = [
            c.read
            for c in crops[:i]
            if own is None or ((s := scale(c)) is not None and s <= own * (1 + SAME_SCALE))
        ]
        seen += _covered_area(box, earlier)
    return seen / total if total else None


def _covered_area(box: Box, others: list[Box]) -> int:
    """Area of `box` inside the union of `others`."""
    clipped = [
        (max(o.x, box.x), max(o.y, box.y), min(o.right, box.right), min(o.bottom, box.bottom)) for o in others
    ]
    clipped = [c for c in clipped if c[2] > c[0] and c[3] > c[1]]
    if not clipped:
        return 0
    xs = sorted({v for c in clipped for v in (c[0], c[2])})
    ys = sorted({v for c in clipped for v in (c[1], c[3])})
    area = 0
    for xa, xb in itertools.pairwise(xs):
        for ya, yb in itertools.pairwise(ys):
            if any(c[0] <= xa and xb <= c[2] and c[1] <= ya and yb <= c[3] for c in clipped):
                area += (xb - xa) * (yb - ya)
    return area
