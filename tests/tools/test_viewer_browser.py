"""The trajectory page of an episode with CONCH calls, opened in headless Chromium (a module of its
own: the browser fixture holds Playwright's event loop while the module runs)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from giant.core import Item

from .test_agent import _conch_episode


@pytest.mark.slow
def test_the_viewer_page_shows_the_scores_in_chromium(
    browser: Any, tmp_path: Path, item: Item, slide_path: Path
) -> None:
    from giant.tracking.viewer import write_html
    from tests.browser import open_page, serve

    # Playwright's sync API keeps an event loop on this thread: the episode runs on another one
    with ThreadPoolExecutor(1) as pool:
        out, traj = pool.submit(_conch_episode, tmp_path, item, slide_path).result()
    write_html(out, traj)
    (out / "favicon.ico").write_bytes(b"")  # Chromium asks the server for one; its 404 is no page error
    with serve(out) as base, open_page(browser, f"{base}/trajectory.html") as opened:
        cells = opened.page.eval_on_selector_all(
            "table.tool tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
        )
        opened.page.screenshot(path=str(tmp_path / "conch_viewer.png"), full_page=True)
        assert opened.errors == []
    [call] = traj.tool_calls
    ranked = sorted(zip(call.scores, call.hypotheses, strict=True), reverse=True)
    assert cells == [[f"{s:+.3f}", h] for s, h in ranked]  # the script tag shows as text
