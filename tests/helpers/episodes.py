"""A scripted episode run by the real agent on a real synthetic slide, and the harness page that looks
into a trajectory page from the same origin: the trajectory viewer's tests, in a browser or not."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from giant.agent.episode import run_episode
from giant.agent.modes import parse_agent
from giant.core import Item
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.record.trajectory import Trajectory
from tests.browser import open_page

T = TypeVar("T")
HOSTILE = "<script>alert('x')</script> & \"quoted\""

# Served beside the trajectory page (traj/): it reads the page once it loaded and writes what it found
# into its own body's data-result.
HARNESS = """<!doctype html><html><body>
<iframe id="page" src="traj/trajectory.html" width="1200" height="2000"></iframe>
<script>
document.getElementById("page").addEventListener("load", () => {
  const d = document.getElementById("page").contentDocument;
  const imgs = [...d.querySelectorAll("img")];
  document.body.setAttribute("data-result", JSON.stringify({
    imgs: imgs.length,
    decoded: imgs.filter((i) => i.complete && i.naturalWidth > 0).length,
    svgImages: d.querySelectorAll("svg image").length,
    rects: d.querySelectorAll("svg rect").length,
    titles: [...d.querySelectorAll("svg rect title")].map((t) => t.textContent),
    scripts: [...d.querySelectorAll("script")].map((s) => s.textContent),
    text: d.body.innerText,
  }));
});
</script></body></html>"""


def apart(coro: Coroutine[Any, Any, T]) -> T:
    """asyncio.run on a thread of its own: in a browser test module Playwright's sync API keeps an
    event loop running on this one."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def harness_result(browser: Any, base: str) -> dict[str, Any]:
    """What HARNESS (served at `base`/harness.html) found in the trajectory page, read in Chromium."""
    with open_page(browser, f"{base}/harness.html") as opened:
        opened.page.wait_for_function("document.body.hasAttribute('data-result')", timeout=60_000)
        result: dict[str, Any] = json.loads(opened.page.get_attribute("body", "data-result") or "{}")
    return result


def scripted_episode(slide: Path, out: Path, tmp_path: Path) -> Trajectory:
    """Two crops (one past the slide's edge) and an answer, the model's text hostile."""
    lines = [
        {
            "reasoning": f"look top-left {HOSTILE}",
            "action": {"type": "crop", "x": 0, "y": 0, "width": 1000, "height": 800},
        },
        {
            "reasoning": "past the right edge",
            "action": {"type": "crop", "x": 2500, "y": 1000, "width": 1000, "height": 500},
        },
        {
            "reasoning": "done",
            "action": {"type": "answer", "text": f'<response>{{"answer": 2}}</response> {HOSTILE}'},
        },
    ]
    script = tmp_path / "script.jsonl"
    script.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    provider = build_provider(provider_settings("scripted", script=str(script)))
    item = Item(
        benchmark="demo",
        benchmark_id="1",
        image_path="s.svs",
        prompt=f"Which? {HOSTILE}",
        options=("a", "b", "c"),
        truth=2,
        metric="accuracy",
    )
    cfg = parse_agent({"mode": "giant", "max_steps": 5, "crop_size": 500})
    return apart(run_episode(item, slide, provider, cfg, out_dir=out))
