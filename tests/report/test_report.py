"""report.html of a real, fault-injected job (tests/report/faults.py: 6 of 20 items fail, each in a
different way): the taxonomy, labels, navigation and cost sections against what was injected and
against independent computations, escaping of the model's text, and `python -m giant.report`."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
import weakref
from collections import Counter
from pathlib import Path

import pytest
from markupsafe import escape
from sklearn.metrics import recall_score

from giant.record import TRAJECTORY_FILE, read_results
from giant.report import navigation, write_report
from giant.report.facts import gather
from giant.report.navigation import crops
from giant.report.taxonomy import cause, event_counts
from giant.wsi.slide import Slide
from giant.wsi.tissue import TissueMask
from tests.eval.runner_fixtures import SLIDES
from tests.report.conftest import FaultedJob
from tests.report.faults import CACHED, CALL_COST, FAULTS, HOSTILE, INPUT, NO_ZOOM, expected_causes, index_of

ROOT = Path(__file__).resolve().parents[2]


def page(job: FaultedJob) -> str:
    return job.layout.report.read_text(encoding="utf-8")


def text_of(markup: str) -> str:
    """The page's visible text, roughly: tags dropped, entities decoded, whitespace collapsed."""
    body = re.sub(r"<(script|style)>.*?</\1>", " ", markup, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))


def test_taxonomy_counts_what_was_injected(faulted: FaultedJob) -> None:
    facts = gather(faulted.layout.out_dir)
    causes = Counter(cause(run) for run in facts.runs)
    assert causes == expected_causes()
    by_item = {index_of(run.record.key): cause(run) for run in facts.runs}
    assert {i: by_item[i] for i in FAULTS} == FAULTS
    assert {by_item[i] for i in NO_ZOOM} == {"answered_without_zooming"}

    events = event_counts(facts.runs)
    sent = faulted.provider.sent
    assert events["invalid_box"] == sent["invalid_box"] > 0
    assert events["parse"] == sent["parse"] > 0
    assert events["refusal"] == sent["refusal"] > 0
    # each crop sent once the answer was due drew one corrective message, the last one failed the item
    assert events["correction"] == sent["crop_when_due"] - 1 > 0

    markup = page(faulted)
    assert f'<b id="failing">{len(FAULTS)}</b> of 20 item-runs' in markup  # 30% failed
    for name, count in expected_causes().items():
        assert re.search(rf"<td>{name}</td><td>[^<]*</td><td class=\"n\">{count}</td>", markup), name


def test_recall_confusion_and_dominant_label(faulted: FaultedJob) -> None:
    records = read_results(faulted.layout.results)
    truth = [r.truth for r in records]
    pred = [-1 if r.label is None else r.label for r in records]
    recalls = recall_score(truth, pred, labels=sorted(set(truth)), average=None, zero_division=0)
    text = text_of(page(faulted))
    for label, recall in zip(sorted(set(truth)), recalls, strict=True):
        n = truth.count(label)
        assert f" {label} {n} {round(recall * n)} {recall:.3f} " in text

    labels = Counter(r.label for r in records if r.label is not None)
    top, count = labels.most_common(1)[0]
    answered = sum(labels.values())
    assert count > answered / 2  # the plan makes grade 0 dominate
    truly = sum(1 for r in records if r.label == top and r.truth == top)
    assert f"One label takes most predictions: {top} for {count} of {answered} answered item-runs" in text
    assert f"of which {truly} truly have it" in text
    failures = sum(r.label is None for r in records)
    assert f" none {failures} {100 * failures / len(records):.1f}% " in text


def test_cost_tokens_cache_and_replayed_calls(faulted: FaultedJob) -> None:
    provider = faulted.provider
    paid = provider.calls - provider.replayed
    row = (
        f" panda 20 {provider.calls} {paid} {provider.replayed} {INPUT * provider.calls} "
        f"{100 * provider.calls} {CACHED * provider.calls} {100 * CACHED / INPUT:.1f}% "
        f"${CALL_COST * paid:.4f} ${CALL_COST * paid / 20:.4f} ${CALL_COST * provider.replayed:.4f} "
    )
    assert provider.replayed > 0 and row in text_of(page(faulted))


def test_crop_mpp_and_tissue_from_the_slide(faulted: FaultedJob) -> None:
    found = crops(gather(faulted.layout.out_dir).runs)
    assert len(found) >= 10
    masks: dict[str, TissueMask] = {}
    for crop in found:
        traj = crop.run.trajectory
        assert traj is not None
        with Slide.open(traj.slide_path) as slide:
            mpp = slide.mpp_x
            if traj.slide_path not in masks:
                masks[traj.slide_path] = TissueMask.from_slide(slide)
        region = crop.region
        assert mpp is not None and crop.mpp == pytest.approx(mpp * region.read.w / region.output_width)
        # the report's coarser mask agrees with the patch sampler's finer one
        assert crop.tissue == pytest.approx(masks[traj.slide_path].fraction(region.read), abs=0.05)
    assert any(crop.tissue and crop.tissue > 0.1 for crop in found)
    finest = min(crop.mpp for crop in found if crop.mpp is not None)
    text = text_of(page(faulted))
    assert f"the finest reached {finest:.3g} µm/px" in text
    assert f"every crop ({len(found)})" in text
    first = found[0]
    assert f" {first.number} {first.region.read} {first.region.level} {first.mpp:.3g} " in text
    # the finest magnification reached against correctness: item-runs without a crop in their own row
    no_crop = [r for r in read_results(faulted.layout.results) if r.crops == 0]
    never_crop = sum(fault in ("invalid_boxes", "unparseable_reply", "refusal") for fault in FAULTS.values())
    assert (
        len(no_crop) == never_crop + len(NO_ZOOM)
        and f" no crop {len(no_crop)} {sum(r.correct for r in no_crop)} " in text
    )


def without_recorded_tissue(job: Path, copy: Path) -> Path:
    """A copy of `job` as written before episodes recorded each crop's tissue fraction."""
    shutil.copytree(job, copy)
    for path in copy.rglob(TRAJECTORY_FILE):
        data = json.loads(path.read_text())
        for region in data["regions"]:
            region.pop("tissue_fraction", None)
        path.write_text(json.dumps(data))
    return copy


def test_recorded_tissue_fractions_open_no_slide(
    faulted: FaultedJob, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The episode records every crop's tissue fraction while its slide is open, on the mask the report
    built from the slide before (issue 23): the report opens no slide, and the numbers are the same."""
    old = {
        (crop.run.record.slot, crop.number): crop.tissue
        for crop in crops(gather(without_recorded_tissue(faulted.layout.out_dir, tmp_path / "old")).runs)
    }

    def no_slide(*args: object, **kwargs: object) -> None:
        raise AssertionError("the report opened a slide")

    monkeypatch.setattr(navigation, "_mask", no_slide)
    monkeypatch.setattr(Slide, "open", no_slide)
    found = crops(gather(faulted.layout.out_dir).runs)
    assert found and all(crop.region.tissue_fraction is not None for crop in found)
    assert {(crop.run.record.slot, crop.number): crop.tissue for crop in found} == old
    assert any(crop.tissue for crop in found)
    for run in gather(faulted.layout.out_dir).runs:  # the overview carries none
        if run.trajectory is not None and run.trajectory.regions:
            assert run.trajectory.regions[0].tissue_fraction is None


def test_tissue_masks_one_slide_at_a_time(
    faulted: FaultedJob, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trajectories without recorded fractions: each slide's mask is built once, however many item-runs
    share the slide, and is gone before the next slide's is built: the report's memory does not grow
    with the slides of a job (issue 23)."""
    job = without_recorded_tissue(faulted.layout.out_dir, tmp_path / "job")
    built: list[Path] = []
    alive: weakref.WeakSet[TissueMask] = weakref.WeakSet()
    most = 0
    build = TissueMask.from_slide

    def tracked(slide: Slide, long_side: int) -> TissueMask:
        nonlocal most
        mask = build(slide, long_side)
        built.append(slide.path)
        alive.add(mask)
        most = max(most, len(alive))
        return mask

    monkeypatch.setattr(TissueMask, "from_slide", tracked)
    monkeypatch.setattr(navigation, "MASK_THREADS", 1)
    runs = gather(job).runs
    found = crops(runs)
    slides = {crop.run.trajectory.slide_path for crop in found if crop.run.trajectory is not None}
    assert len(slides) == 2 and sorted(map(str, built)) == sorted(slides)  # 20 item-runs, 2 slides
    assert most == 1 and not alive
    assert any(crop.tissue for crop in found)


def test_unknown_mpp_and_tissue_for_old_trajectories_and_moved_slides(
    faulted: FaultedJob, tmp_path: Path
) -> None:
    """A trajectory written before slide_mpp was recorded, and a slide no longer at its path."""
    job = tmp_path / "job"
    shutil.copytree(faulted.layout.out_dir, job)
    for path in job.rglob(TRAJECTORY_FILE):
        data = json.loads(path.read_text())
        data.pop("slide_mpp")
        for region in data["regions"]:
            region.pop("tissue_fraction", None)
            region.pop("mpp", None)  # written before regions recorded their µm/px, too
        data["slide_path"] = str(tmp_path / "gone" / Path(data["slide_path"]).name)
        path.write_text(json.dumps(data))
    write_report(job)
    text = text_of((job / "report.html").read_text())
    assert re.search(r"µm/px crops item-runs mean tissue unknown \d+ \d+ unknown", text)
    assert "finest reached" not in text


def test_model_text_is_escaped(faulted: FaultedJob) -> None:
    markup = page(faulted)
    assert HOSTILE not in markup and "__pwned" in markup  # shown, as text
    assert escape(HOSTILE) in markup  # as Jinja2's autoescape writes it
    assert markup.count("<script>") == 1  # the page's own


def test_rows_link_to_trajectory_pages(faulted: FaultedJob) -> None:
    links = re.findall(r'<a href="([^"]+)">', page(faulted))
    records = read_results(faulted.layout.results)
    # the other links: the overviews of the slides several item-runs looked at (giant.report.overviews)
    rows = [link for link in links if not link.startswith("overviews/")]
    assert {link for link in rows} == {f"{r.trajectory}/trajectory.html" for r in records}
    overviews = {f"overviews/{slide.split('.')[0]}.html" for slide in SLIDES}
    assert {link for link in links if link not in rows} == overviews
    assert all((faulted.layout.out_dir / link).is_file() for link in links)


def test_module_cli_rewrites_the_report(faulted: FaultedJob, tmp_path: Path) -> None:
    job = tmp_path / "job"
    shutil.copytree(faulted.layout.out_dir, job)
    (job / "report.html").unlink()
    done = subprocess.run(
        [sys.executable, "-m", "giant.report", str(job)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(job / "report.html")
    assert (job / "report.html").read_text().count('<tr data-task="panda"') == 20

    bad = subprocess.run(
        [sys.executable, "-m", "giant.report", str(tmp_path / "nothing")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.count("\n") == 1 and "no results.jsonl" in bad.stderr


def test_no_link_where_no_trajectory_page(faulted: FaultedJob, tmp_path: Path) -> None:
    """A re-score's folder holds results but no trajectories: rows stay, without dead links."""
    job = tmp_path / "job"
    shutil.copytree(faulted.layout.out_dir, job)
    shutil.rmtree(job / "trajectories")
    markup = write_report(job).read_text(encoding="utf-8")
    assert "<a href" not in markup and markup.count('<tr data-task="panda"') == 20
