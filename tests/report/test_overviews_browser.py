"""A slide's overview page opened in headless Chromium (tests/browser.py) from the run report's link:
the overview image loads, every run's boxes lie on it in the run's colour, the annotated target under
them, no script errors, and a run's row leads to its trajectory page. The screenshot goes to
$GIANT_SCREENSHOTS when set, else into the test's tmp folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from giant.record import JobLayout, latest_by_slot, read_results, read_trajectory
from giant.record.navigation import crop_regions
from tests.browser import open_page, serve
from tests.eval.runner_fixtures import SLIDES
from tests.report.overview_job import RUNS


@pytest.fixture
def job(overviews: Path) -> Path:
    """The session's overview job (tests/report/conftest.py), read only."""
    return overviews


@pytest.mark.slow
def test_the_report_links_each_slide_overview_with_every_run_drawn(
    browser: Any, job: Path, tmp_path: Path
) -> None:
    crops: dict[str, int] = {}  # '<key> #<run>' of SLIDES[0] -> its crops
    for record in latest_by_slot(read_results(JobLayout(job).results)).values():
        traj = read_trajectory(job / str(record.trajectory))
        if Path(traj.slide_path).name == SLIDES[0]:
            crops[f"{record.key} #{record.run_index}"] = len(crop_regions(traj))
    assert len(crops) == RUNS and all(crops.values())
    shots = Path(os.environ.get("GIANT_SCREENSHOTS", tmp_path))
    with serve(job) as base, open_page(browser, f"{base}/report.html") as opened:
        page = opened.page
        failed: list[str] = []
        page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
        links = page.locator("#overviews a")
        assert links.count() == len(SLIDES)
        with page.expect_navigation():
            page.locator("#overviews a", has_text=SLIDES[0]).click()
        page.wait_for_load_state("load")
        # the overview JPEG (another run's folder, named from the page) decoded into the SVG
        loaded = page.evaluate(
            """() => new Promise(done => {
                const img = new Image();
                img.onload = () => done(img.naturalWidth);
                img.onerror = () => done(0);
                img.src = document.querySelector("svg.overview image").getAttribute("href");
            })"""
        )
        assert loaded > 0
        svg = page.locator("svg.overview").bounding_box()
        assert svg is not None
        for run, n in crops.items():
            boxes = page.locator(f'g.run[data-run="{run}"] rect.run-box')
            assert boxes.count() == n
            colours = {boxes.nth(i).get_attribute("stroke") for i in range(n)}
            assert len(colours) == 1
            for i in range(n):  # drawn, and inside the overview
                box = boxes.nth(i).bounding_box()
                assert box is not None and box["width"] > 0 and box["height"] > 0
                assert svg["x"] - 1 <= box["x"] and box["x"] + box["width"] <= svg["x"] + svg["width"] + 1
        assert page.locator("polygon.annotation").count() == 1
        assert page.locator("#runs tbody tr").count() == RUNS
        page.screenshot(path=str(shots / "overview.png"), full_page=True)
        assert opened.errors == [] and failed == []

        link = page.locator("#runs a").first
        with page.expect_navigation():
            link.click()
        assert page.url.endswith("/trajectory.html") and page.locator("svg.overview").count() == 1
    assert (shots / "overview.png").stat().st_size > 5_000
