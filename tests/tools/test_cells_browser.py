"""The trajectory page of an episode with a cells call, opened in headless Chromium (a module of its
own: the browser fixture holds Playwright's event loop while the module runs)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from giant.core import Item
from giant.record.trajectory import Trajectory
from giant.tools.cells.tool import CellsTool
from tests.agent.conftest import answer, crop, run, scripted

from .cells_tiles import settings


def _cells_episode(tmp_path: Path, item: Item, slide_path: Path) -> tuple[Path, Trajectory]:
    step = {
        "reasoning": "count",
        "action": {"type": "cells", "x": 1000, "y": 500, "width": 2000, "height": 1600},
    }
    provider = scripted(tmp_path, [crop(1000, 500, 3000, 1200), step, answer(2)])
    out = tmp_path / "out"
    tool = CellsTool.load(settings())
    return out, run(item, slide_path, provider, out, max_steps=6, loaded={"cells": tool}, tools=["cells"])


@pytest.mark.slow
def test_the_trajectory_page_shows_the_numbers_and_the_overlay_in_chromium(
    browser: Any, tmp_path: Path, item: Item, slide_path: Path
) -> None:
    from giant.tracking.viewer import write_html
    from tests.browser import open_page, serve

    with ThreadPoolExecutor(1) as pool:  # Playwright's event loop holds this thread
        out, traj = pool.submit(_cells_episode, tmp_path, item, slide_path).result()
    write_html(out, traj)
    (out / "favicon.ico").write_bytes(b"")
    [record] = traj.tool_calls
    with serve(out) as base, open_page(browser, f"{base}/trajectory.html") as opened:
        rows = opened.page.eval_on_selector_all(
            "table.tool tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
        )
        shown = opened.page.eval_on_selector(
            "img.overlay", "img => [img.complete, img.naturalWidth, img.naturalHeight]"
        )
        opened.page.screenshot(path=str(tmp_path / "cells_viewer.png"), full_page=True)
        assert opened.errors == []
    assert ["nuclei", str(record.count)] in rows
    assert rows[0] == ["nuclei", str(record.count)] and record.count > 0
    assert shown == [True, 768, 614]  # the overlay loaded: 1000 x 800 px read, at most 768 px kept
