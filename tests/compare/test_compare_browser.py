"""comparison.html opened in headless Chromium: no script errors, every trajectory link resolves to a
page that is there (a copied page opens with its images), and the direction filter changes the
visible rows. The screenshot goes to
/work/notes/compare.png when that folder exists (the closing note), else into tmp_path."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.browser import open_page, serve
from tests.compare.conftest import Compared

NOTES = Path("/work/notes")


@pytest.mark.slow
def test_comparison_page_in_chromium(browser: Any, compared: Compared, tmp_path: Path) -> None:
    with serve(compared.out) as base, open_page(browser, f"{base}/comparison.html") as opened:
        page = opened.page
        assert page.title() == "giant: paired comparison"
        rows = page.locator("tr.flip")
        total = rows.count()
        assert total > 0
        hrefs = [rows.nth(i).locator("a").nth(j).get_attribute("href") for i in range(total) for j in (0, 1)]
        assert len(hrefs) == 2 * total and all(hrefs)
        for href in hrefs:
            assert (compared.out / href).is_file(), href
            with urllib.request.urlopen(f"{base}/{href}") as response:  # served, not just on disk
                assert response.status == 200 and b"<html" in response.read(2000).lower()
        directions = [rows.nth(i).get_attribute("data-direction") for i in range(total)]
        page.select_option("#direction", "wrong -> right")
        visible = page.locator("tr.flip:visible").count()
        assert visible == directions.count("wrong -> right") < total
        assert page.locator("#shown").inner_text() == str(visible)
        page.select_option("#direction", "all")
        assert page.locator("tr.flip:visible").count() == total
        shot = (NOTES if NOTES.is_dir() else tmp_path) / "compare.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 0
        assert opened.errors == []
        _opens_with_its_images(browser, f"{base}/{hrefs[0]}")


def _opens_with_its_images(browser: Any, url: str) -> None:
    """A copied trajectory page loads every image it names (the viewer's page has no favicon link:
    that request alone is answered here, so any other failed load is a missing file)."""
    context = browser.new_context()
    try:
        context.route("**/favicon.ico", lambda route: route.fulfill(status=204, body=""))
        page = context.new_page()
        failed: list[str] = []
        page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        page.on("pageerror", lambda exc: failed.append(str(exc)))
        page.goto(url, wait_until="load")
        assert page.locator("[data-image]").count() > 0  # the overview, and the crops if any
        assert failed == []
    finally:
        context.close()
