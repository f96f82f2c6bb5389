"""Where the model looked: for every crop, the microns per pixel of the image it saw (the slide's mpp
times the read box's side over the image's side: 0.25 is 40x, 1.0 is 10x) and the tissue fraction of
the box (the slide's tissue mask, giant.wsi.tissue), then how the number of steps relates to being
right. A slide without an mpp, or no longer at its recorded path, gives "unknown", never a guess."""

from __future__ import annotations

import logging
import os
import statistics
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from giant.record.navigation import crop_regions, seen_mpp
from giant.record.trajectory import Region
from giant.report.facts import ItemRun
from giant.wsi import SlideError
from giant.wsi.slide import Slide
from giant.wsi.tissue import CROP_MASK_SIDE, TissueMask

log = logging.getLogger(__name__)

# Upper edges of the magnification bands, in microns per pixel (40x, 20x, 10x, 5x, 2.5x, 1.25x).
MPP_BANDS = (0.3, 0.6, 1.2, 2.4, 4.8, 9.6)
TISSUE_BANDS = (0.1, 0.5, 0.9)  # upper edges: mostly glass, partly tissue, mostly tissue, all tissue
# The mask's long side: 1024 px costs about a third of the patch sampler's 2048 per slide and still spans
# ten mask pixels across a crop of 1/100 of the slide; benchmarks/report_tissue.py measures both. The
# episode records each crop's fraction on the same mask (Region.tissue_fraction); the report builds one
# only for trajectories written before it did.
MASK_SIDE = CROP_MASK_SIDE
# Masks are built on this many threads (the slide read, PIL, numpy and scipy.ndimage release the GIL for
# most of a build: 1.8x on 2 cores); each one in flight holds about 20 MB while it is built.
MASK_THREADS = min(4, os.cpu_count() or 1)


@dataclass(frozen=True)
class Crop:
    run: ItemRun
    number: int  # 1-based within the episode, as the trajectory page numbers it
    region: Region
    mpp: float | None
    tissue: float | None


@dataclass(frozen=True)
class Band:
    label: str
    crops: int
    items: int  # item-runs with at least one crop in the band
    tissue_mean: float | None


@dataclass(frozen=True)
class Tally:
    """Item-runs of one group and how many of them are correct."""

    label: str
    item_runs: int
    correct: int


Slot = tuple[str, int]  # (item key, run index)


def tissue_fractions(runs: list[ItemRun]) -> dict[Slot, list[float | None]]:
    """(key, run index) -> the tissue fraction of each of its crops, in `crop_regions` order.

    Recorded fractions first (Region.tissue_fraction); older trajectories' slides are read slide by
    slide, never all at once: 221 TCGA masks held together were 1.4 GB (issue 23). Each slide's
    mask is built, read for every crop on it (tasks and run indices share slides) and dropped inside
    one task of a small thread pool, so at most MASK_THREADS masks exist at a time.
    """
    by_slide: dict[str, list[tuple[Slot, list[Region]]]] = defaultdict(list)
    for run in runs:
        if run.trajectory is not None:
            by_slide[run.trajectory.slide_path].append((run.record.slot, crop_regions(run.trajectory)))
    with ThreadPoolExecutor(MASK_THREADS) as pool:
        done = pool.map(_fractions_on_slide, by_slide.items())
        return {slot: fractions for members in done for slot, fractions in members}


def _fractions_on_slide(
    slide: tuple[str, list[tuple[Slot, list[Region]]]],
) -> list[tuple[Slot, list[float | None]]]:
    """One slide's crops, by their recorded fractions; the slide is opened only when a crop has none
    (a trajectory written before the episode recorded them, or a mask the episode could not build)."""
    path, members = slide
    missing = any(r.tissue_fraction is None for _, regions in members for r in regions)
    mask = _mask(path) if missing else None
    return [(slot, [_fraction(r, mask) for r in regions]) for slot, regions in members]


def _fraction(region: Region, mask: TissueMask | None) -> float | None:
    if region.tissue_fraction is not None:
        return region.tissue_fraction
    return None if mask is None else mask.fraction(region.read)


def _mask(path: str) -> TissueMask | None:
    """The slide's mask, or None when there is no slide at `path` any more (or it cannot be read)."""
    if not path:
        return None
    try:
        with Slide.open(path) as slide:
            return TissueMask.from_slide(slide, MASK_SIDE)
    except SlideError as exc:
        log.info("report: no tissue fractions for %s (%s)", path, exc)
        return None


def crops(runs: list[ItemRun]) -> list[Crop]:
    """Every crop of every item-run, in the runs' order."""
    tissue = tissue_fractions(runs)
    found = []
    for run in runs:
        traj = run.trajectory
        if traj is None:
            continue
        regions = crop_regions(traj)
        for number, (region, fraction) in enumerate(zip(regions, tissue[run.record.slot], strict=True), 1):
            found.append(Crop(run, number, region, seen_mpp(traj, region), fraction))
    return found


def band_label(value: float | None, edges: tuple[float, ...], unit: str) -> str:
    if value is None:
        return "unknown"
    low = 0.0
    for edge in edges:
        if value <= edge:
            return f"{low:g}–{edge:g}{unit}"
        low = edge
    return f"> {edges[-1]:g}{unit}"


def bands(found: list[Crop], edges: tuple[float, ...], unit: str, value: str) -> list[Band]:
    """Crops counted by band of `value` ("mpp" or "tissue"), in band order, "unknown" last."""
    groups: dict[str, list[Crop]] = defaultdict(list)
    for crop in found:
        groups[band_label(getattr(crop, value), edges, unit)].append(crop)
    order = [band_label(edge, edges, unit) for edge in edges] + [f"> {edges[-1]:g}{unit}", "unknown"]
    rows = []
    for label in order:
        members = groups.get(label, [])
        if not members:
            continue
        tissue = [crop.tissue for crop in members if crop.tissue is not None]
        rows.append(
            Band(
                label=label,
                crops=len(members),
                items=len({(c.run.record.key, c.run.record.run_index) for c in members}),
                tissue_mean=statistics.fmean(tissue) if tissue else None,
            )
        )
    return rows


def steps_vs_correct(runs: list[ItemRun]) -> list[Tally]:
    """Item-runs and correct ones by the number of steps used (crops, notes and the answer)."""
    groups: dict[int, list[bool]] = defaultdict(list)
    for run in runs:
        groups[run.record.steps].append(run.record.correct)
    return [Tally(str(steps), len(group), sum(group)) for steps, group in sorted(groups.items())]


def finest_vs_correct(runs: list[ItemRun], found: list[Crop]) -> list[Tally]:
    """Item-runs and correct ones by the band of the finest microns per pixel they reached: does
    zooming further in go with being right? "no crop" for item-runs that never zoomed."""
    finest = per_run(found)
    groups: dict[str, list[bool]] = defaultdict(list)
    for run in runs:
        slot = run.record.slot
        label = band_label(finest[slot][0], MPP_BANDS, " µm/px") if slot in finest else "no crop"
        groups[label].append(run.record.correct)
    order = [band_label(edge, MPP_BANDS, " µm/px") for edge in MPP_BANDS]
    order += [f"> {MPP_BANDS[-1]:g} µm/px", "unknown", "no crop"]
    return [Tally(label, len(groups[label]), sum(groups[label])) for label in order if label in groups]


def per_run(found: list[Crop]) -> dict[tuple[str, int], tuple[float | None, float | None]]:
    """(key, run index) -> (finest mpp reached, mean tissue fraction) over its crops."""
    groups: dict[tuple[str, int], list[Crop]] = defaultdict(list)
    for crop in found:
        groups[crop.run.record.slot].append(crop)
    result = {}
    for slot, members in groups.items():
        mpps = [c.mpp for c in members if c.mpp is not None]
        tissue = [c.tissue for c in members if c.tissue is not None]
        result[slot] = (min(mpps) if mpps else None, statistics.fmean(tissue) if tissue else None)
    return result
