"""The front page's two pictures, taken by the tests' headless Chromium from a real job.

One demo job through the CLI (the session's demo store, tests/helpers/store.py: the offline `random`
provider, T=3), then its
run report and one trajectory page opened in Chromium: both load without script errors and show the
job's items and steps. The screenshots go to $GIANT_PICTURES when set (`make pictures` points it at
docs/images/, where README.md and the site show them), else into the test's tmp folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from giant.record import JobLayout, read_results
from tests.browser import open_page, screenshot, serve, shots
from tests.helpers.store import ITEMS, DemoStore

VIEWPORT = {"width": 1280, "height": 900}


@pytest.fixture(scope="module")
def job(demo_store: DemoStore) -> JobLayout:
    """The demo store's demo_shapes job at the larger step limit (read only: served as it is)."""
    return JobLayout(demo_store.folders()[-1])


@pytest.mark.slow
def test_the_run_report_picture(browser: Any, job: JobLayout, tmp_path: Path) -> None:
    records = read_results(job.results)
    with serve(job.out_dir) as base, open_page(browser, f"{base}/report.html", **VIEWPORT) as opened:
        page = opened.page
        assert page.locator("#items tbody tr").count() == len(records) == ITEMS
        assert "demo_shapes" in page.inner_text("body")
        path = shots(tmp_path) / "report.png"
        screenshot(page, path)
        assert opened.errors == []
    assert path.stat().st_size > 20_000


@pytest.mark.slow
def test_the_trajectory_picture(browser: Any, job: JobLayout, tmp_path: Path) -> None:
    record = max(read_results(job.results), key=lambda r: r.crops)
    assert record.trajectory is not None and record.crops >= 1
    page_path = f"{record.trajectory}/trajectory.html"
    with serve(job.out_dir) as base, open_page(browser, f"{base}/{page_path}", **VIEWPORT) as opened:
        page = opened.page

        images = page.locator("img")
        assert images.count() >= 2  # the overview and at least one crop
        widths = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.naturalWidth)")
        assert all(w > 0 for w in widths), widths  # every image beside the page loaded and decoded
        page.locator("h2", has_text="Overview and crops").evaluate("h => h.scrollIntoView()")
        path = shots(tmp_path) / "trajectory.png"
        screenshot(page, path)
        assert opened.errors == []
    assert path.stat().st_size > 20_000
