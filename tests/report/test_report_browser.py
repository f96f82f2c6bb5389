"""report.html of the fault-injected job opened in headless Chromium (tests/browser.py): no script
errors, the filters hide and show rows, the headings sort, the model's hostile text never runs, and
the rows' links reach the trajectory pages. The screenshot goes to $GIANT_SCREENSHOTS when set (the
closing note's picture), else into the test's tmp folder."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from giant.record import read_results
from tests.browser import open_page, serve
from tests.report.conftest import FaultedJob

VISIBLE = "#items tbody tr:not([hidden])"


def column(page: Any, heading: str) -> list[str]:
    """The sort values of a column, top to bottom, over the visible rows."""
    index = page.locator("#items thead th").all_inner_texts().index(heading)
    return page.eval_on_selector_all(VISIBLE, f"rows => rows.map(r => r.cells[{index}].dataset.v)")


@pytest.mark.slow
def test_report_page_filters_sorts_and_runs_no_model_text(
    browser: Any, faulted: FaultedJob, tmp_path: Path
) -> None:
    records = read_results(faulted.layout.results)
    statuses = Counter(r.status for r in records)
    shots = Path(os.environ.get("GIANT_SCREENSHOTS", tmp_path))
    with serve(faulted.layout.out_dir) as base, open_page(browser, f"{base}/report.html") as opened:
        page = opened.page
        assert page.locator(VISIBLE).count() == len(records) == 20

        for status, count in statuses.items():  # each status filter shows exactly its rows
            page.select_option('select[data-filter="status"]', status)
            assert page.locator(VISIBLE).count() == count
            assert page.inner_text("#shown") == str(count)
        page.select_option('select[data-filter="status"]', "")
        page.select_option('select[data-filter="why"]', "refusal")
        page.select_option('select[data-filter="correct"]', "no")
        assert page.locator(VISIBLE).count() == 1
        page.select_option('select[data-filter="why"]', "")
        page.select_option('select[data-filter="correct"]', "")
        assert page.locator(VISIBLE).count() == 20

        page.click("#items th:text-is('cost')")
        costs = [float(v) for v in column(page, "cost")]
        assert costs == sorted(costs) and costs[0] < costs[-1]
        page.click("#items th:text-is('cost')")
        assert [float(v) for v in column(page, "cost")] == sorted(costs, reverse=True)
        page.click("#items th:text-is('item')")
        keys = column(page, "item")
        assert keys == sorted(keys)

        assert page.evaluate("window.__pwned") is None  # the hostile text was shown, never run
        assert page.locator("script").count() == 1
        assert "__pwned" in page.inner_text("body")
        page.screenshot(path=str(shots / "report.png"), full_page=True)
        assert opened.errors == []

        link = page.locator("#items tbody a").first
        href = link.get_attribute("href")
        assert href is not None
        with page.expect_navigation():
            link.click()
        assert page.url == f"{base}/{href}" and page.title()
    assert (shots / "report.png").stat().st_size > 10_000
