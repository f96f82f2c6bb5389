"""Navigation and evidence for the runner, the re-score and summary.json: an item-run's record with
its evidence against the slide's annotations, and the run's aggregate (giant.record.summary
.NavigationSummary; the formulas are in docs/navigation.md)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

from giant.eval.annotations import Annotations
from giant.eval.bootstrap import bootstrap
from giant.eval.scoring_settings import NavigationSettings
from giant.record import ResultRecord
from giant.record.navigation import Grid, Navigation, navigation, with_evidence
from giant.record.read import read_trajectories
from giant.record.summary import NavigationSummary
from giant.record.trajectory import Trajectory
from giant.wsi import SlideError
from giant.wsi.slide import Slide
from giant.wsi.tissue import crop_tissue


def item_navigation(
    traj: Trajectory,
    annotations: Annotations | None,
    settings: NavigationSettings,
    tissue: Grid | None = None,
) -> Navigation | None:
    """The trajectory's record (made by the episode; made here from the regions for one written before,
    with `tissue` when given) with evidence when the slide is annotated. None: the slide never opened.
    Blocking (an annotation file may be read): call it off the event loop."""
    if not traj.slide_width:
        return None
    record = traj.navigation or navigation(traj, tissue, settings)
    record = record.model_copy(
        update={"hit": None, "first_hit_step": None, "on_target": None, "hit_steps": None}
    )
    if annotations is None:
        return record
    target = annotations.target(Path(traj.slide_path), traj.slide_width, traj.slide_height)
    return record if target is None else with_evidence(record, traj, target, settings)


def renavigate(
    records: Sequence[ResultRecord],
    folder: Path,
    annotations: Annotations | None,
    settings: NavigationSettings,
) -> list[ResultRecord]:
    """Each record with its navigation made again from its trajectory under `folder` (no provider call):
    today's annotations and thresholds count. A trajectory written before the episode recorded its
    navigation is measured on its slide's tissue mask, if the slide is still there. Records without a
    (readable) trajectory keep what they have. Blocking: reads the trajectories."""
    found = read_trajectories(folder, list(records))
    out = []
    for record in records:
        traj = found.get(record.slot)
        if traj is None:
            out.append(record)
            continue
        tissue = _tissue(traj.slide_path) if traj.navigation is None else None
        if traj.navigation is not None:
            traj.navigation = _remeasured(traj, settings)
        out.append(
            record.model_copy(update={"navigation": item_navigation(traj, annotations, settings, tissue)})
        )
    return out


def _remeasured(traj: Trajectory, settings: NavigationSettings) -> Navigation | None:
    """The episode's record, measured again when the coverage threshold changed (on the slide's mask)."""
    assert traj.navigation is not None
    if traj.navigation.coverage_mpp in (None, settings.coverage_mpp):
        return traj.navigation
    tissue = _tissue(traj.slide_path)
    return navigation(traj, tissue, settings) if tissue is not None else traj.navigation


def _tissue(path: str) -> Grid | None:
    try:
        with Slide.open(path) as slide:
            return crop_tissue(slide)
    except SlideError:
        return None


def summarize_navigation(
    records: Sequence[ResultRecord], *, replicates: int, seed: int
) -> NavigationSummary | None:
    """The run's aggregate over the item-runs that have a record (None if none has)."""
    found = [(r, r.navigation) for r in records if r.navigation is not None]
    if not found:
        return None
    navs = [nav for _, nav in found]
    fine = [nav.first_fine_step for nav in navs if nav.first_fine_step is not None]
    annotated = [(r, nav) for r, nav in found if nav.hit is not None]
    hits = [bool(nav.hit) for _, nav in annotated]
    return NavigationSummary(
        item_runs=len(navs),
        steps=statistics.fmean(nav.steps for nav in navs),
        crops=statistics.fmean(nav.crops for nav in navs),
        finest_mpp=_median([nav.finest_mpp for nav in navs]),
        median_mpp=_median([nav.median_mpp for nav in navs]),
        tissue=_mean([nav.tissue for nav in navs]),
        coverage=_mean([nav.coverage for nav in navs]),
        revisits=_mean([nav.revisits for nav in navs]),
        fine_rate=len(fine) / len(navs),
        first_fine_step=statistics.fmean(fine) if fine else None,
        mpp_by_step=_mpp_by_step(navs),
        annotated=len(annotated),
        not_annotated=len(navs) - len(annotated),
        # the hit rate as the accuracy of "hit" against an all-hit truth: the metric bootstrap's own code
        hit_rate=bootstrap(
            [1] * len(hits), [int(h) for h in hits], "accuracy", replicates=replicates, seed=seed
        )
        if hits
        else None,
        first_hit_step=_mean([float(nav.first_hit_step) for _, nav in annotated if nav.first_hit_step]),
        on_target=_mean([nav.on_target for _, nav in annotated]),
        accuracy_hit=_mean([float(r.correct) for r, nav in annotated if nav.hit]),
        accuracy_no_hit=_mean([float(r.correct) for r, nav in annotated if not nav.hit]),
        hit_rate_by_step=_hit_rate_by_step([nav for _, nav in annotated]),
    )


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.fmean(known) if known else None


def _median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _mpp_by_step(navs: Sequence[Navigation]) -> list[float | None]:
    """Median µm/px of the n-th crop over the item-runs that showed one."""
    longest = max((len(nav.crop_mpp) for nav in navs), default=0)
    return [_median([nav.crop_mpp[n] for nav in navs if len(nav.crop_mpp) > n]) for n in range(longest)]


def _hit_rate_by_step(navs: Sequence[Navigation]) -> list[float]:
    """Share of annotated item-runs with a hit by the n-th crop (a shorter episode keeps its last state)."""
    longest = max((len(nav.hit_steps or []) for nav in navs), default=0)
    return [statistics.fmean(_hit_by(nav, n) for nav in navs) for n in range(longest)] if navs else []


def _hit_by(nav: Navigation, n: int) -> float:
    steps = nav.hit_steps or []
    return float(steps[min(n, len(steps) - 1)]) if steps else 0.0
