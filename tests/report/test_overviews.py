"""The overviews of slides several runs looked at (giant.report.overviews): one page per slide, linked
from the report, with every run's crop boxes in the run's colour and the annotations under them."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from giant.record import JobLayout, latest_by_slot, read_results, read_trajectory
from giant.record.navigation import crop_regions
from giant.report import write_report
from tests.eval.runner_fixtures import SLIDES
from tests.report.overview_job import RUNS


class Drawn(HTMLParser):
    """The boxes of each run group, the outlines and the links of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.run: str | None = None
        self.boxes: Counter[str] = Counter()
        self.colours: dict[str, set[str]] = {}
        self.outlines = 0
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "g" and a.get("class") == "run":
            self.run = a["data-run"]
        elif tag == "rect" and a.get("class") == "run-box":
            assert self.run is not None
            self.boxes[self.run] += 1
            self.colours.setdefault(self.run, set()).add(str(a["stroke"]))
        elif tag == "polygon" and a.get("class") == "annotation":
            self.outlines += 1
        elif tag == "a" and a.get("href"):
            self.links.append(str(a["href"]))

    def handle_endtag(self, tag: str) -> None:
        if tag == "g":
            self.run = None


def drawn(path: Path) -> Drawn:
    parser = Drawn()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


@pytest.fixture
def job(overviews: Path) -> Path:
    """The session's overview job (tests/report/conftest.py), read only."""
    return overviews


def _crops_by_run(job: Path) -> dict[str, tuple[str, int]]:
    """'<key> #<run>' -> (its slide, its crops), from the trajectories."""
    out = {}
    for record in latest_by_slot(read_results(JobLayout(job).results)).values():
        assert record.trajectory
        traj = read_trajectory(job / record.trajectory)
        out[f"{record.key} #{record.run_index}"] = (Path(traj.slide_path).name, len(crop_regions(traj)))
    return out


def test_each_slide_page_draws_the_boxes_of_every_run_in_its_own_colour(job: Path) -> None:
    runs = _crops_by_run(job)
    assert len(runs) == RUNS * len(SLIDES) and sum(crops for _, crops in runs.values()) > 0
    report = drawn(JobLayout(job).report)
    pages = [link for link in report.links if link.startswith("overviews/")]
    assert len(pages) == len(SLIDES)
    for slide in SLIDES:
        page = job / f"overviews/{slide.split('.')[0]}.html"
        assert page.relative_to(job).as_posix() in pages
        found = drawn(page)
        mine = {run: crops for run, (on, crops) in runs.items() if on == slide}
        assert len(mine) == RUNS
        assert {run: found.boxes[run] for run in mine} == mine  # every crop of every run, no other
        assert sum(found.boxes.values()) == sum(mine.values())
        colours = [found.colours.get(run, set()) for run in mine if mine[run]]
        assert all(len(c) == 1 for c in colours) and len(set().union(*colours)) == len(colours)
        # the annotated slide shows its target under the boxes; the other has none
        assert found.outlines == (1 if slide == SLIDES[0] else 0)
        # each run's row links its trajectory page, which is there
        trajectories = [link for link in found.links if link.endswith("trajectory.html")]
        assert len(trajectories) == RUNS
        assert all((page.parent / link).resolve().is_file() for link in trajectories)
        image = re.search(r'<image href="([^"]+)"', page.read_text(encoding="utf-8"))
        assert image is not None and (page.parent / image.group(1)).resolve().is_file()


def test_a_report_written_again_replaces_the_pages_and_one_run_per_slide_draws_none(
    job: Path, tmp_path: Path
) -> None:
    job = Path(shutil.copytree(job, tmp_path / "job"))  # rewritten here
    stale = JobLayout(job).overviews / "gone.html"
    stale.write_text("old")
    write_report(job)  # the CLI's path: no annotations given, so no outlines
    assert not stale.exists()
    assert drawn(job / f"overviews/{SLIDES[0].split('.')[0]}.html").outlines == 0
    # a job with one run per slide: nothing to compare, no page and no section
    results = JobLayout(job).results
    lines = results.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if '"run_index": 0' in line or '"run_index":0' in line]
    assert len(kept) == len(SLIDES)
    results.write_text("\n".join(kept) + "\n", encoding="utf-8")
    write_report(job)
    assert not list(JobLayout(job).overviews.glob("*.html"))
    assert not [link for link in drawn(JobLayout(job).report).links if link.startswith("overviews/")]
