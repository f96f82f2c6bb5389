"""The trajectory page opened for real in headless Chromium (Debian's `chromium`), not only written.

The page and a small harness are served from one loopback HTTP server, so the harness can look into
the page (same origin): every <img> must have decoded (naturalWidth > 0), the overview's SVG must hold
its image and one box per crop, and the verdict must be on screen. `.ci/run` installs chromium; without
it the test skips with the install command locally and fails under CI, like the SLURM tests.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from giant.tracking.viewer import MLFLOW_IMAGES, write_html
from tests.browser import CHROMIUM, FLAGS, INSTALL, serve, unavailable
from tests.tracking.test_viewer import scripted_episode, slide  # noqa: F401  (the slide fixture)

# --dump-dom needs the old headless mode flag; the page is given 5 s of virtual time to load
DUMP_FLAGS = ["--headless", *FLAGS, "--virtual-time-budget=5000"]

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
    scripts: [...d.querySelectorAll("script")].map((s) => s.textContent),
    text: d.body.innerText,
  }));
});
</script></body></html>"""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    with serve(tmp_path) as url:
        yield url


@pytest.mark.slow
def test_trajectory_page_renders_in_chromium(slide: Path, tmp_path: Path, served: str) -> None:  # noqa: F811
    if CHROMIUM is None:
        unavailable(f"headless Chromium is not installed; install it with: {INSTALL}")
    out = tmp_path / "traj"
    traj = scripted_episode(slide, out, tmp_path)
    write_html(out, truth="2", correct=True)
    (tmp_path / "harness.html").write_text(HARNESS, encoding="utf-8")

    profile = tmp_path / "profile"
    done = subprocess.run(
        [CHROMIUM, *DUMP_FLAGS, f"--user-data-dir={profile}", "--dump-dom", f"{served}/harness.html"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'data-result="([^"]*)"', done.stdout)
    assert found, f"the harness never saw the page load: {done.stdout[-1000:]}"
    result = json.loads(html.unescape(found.group(1)))

    crops = len(traj.regions) - 1
    assert result["imgs"] == crops and result["decoded"] == crops  # every crop decoded in the browser
    assert result["svgImages"] == 1 and result["rects"] >= crops  # the overview and one box per crop
    assert "correct" in result["text"] and "answered" in result["text"]
    # the model's hostile text is shown as text, never run: the only script is the page's own
    assert result["scripts"] == [MLFLOW_IMAGES] and "<script>alert('x')</script>" in result["text"]
