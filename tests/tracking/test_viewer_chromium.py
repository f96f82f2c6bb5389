"""The trajectory page opened for real in headless Chromium (Debian's `chromium`, the session's:
tests/browser.py), not only written.

The page and a small harness (tests/helpers/episodes.py) are served from one loopback HTTP server, so
the harness can look into the page (same origin): every <img> must have decoded (naturalWidth > 0),
the overview's SVG must hold its image and one box per crop, and the verdict must be on screen.
`.ci/run` installs chromium; without it the test skips with the install command locally and fails
under CI, like the SLURM tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from giant.tracking.viewer import MLFLOW_IMAGES, write_html
from tests.browser import serve
from tests.helpers.episodes import HARNESS, harness_result, scripted_episode


@pytest.mark.slow
def test_trajectory_page_renders_in_chromium(browser: Any, slide: Path, tmp_path: Path) -> None:
    out = tmp_path / "traj"
    traj = scripted_episode(slide, out, tmp_path)
    write_html(out, truth="2", correct=True)
    (tmp_path / "harness.html").write_text(HARNESS, encoding="utf-8")
    with serve(tmp_path) as base:
        result = harness_result(browser, base)

    crops = len(traj.regions) - 1
    assert result["imgs"] == crops and result["decoded"] == crops  # every crop decoded in the browser
    assert result["svgImages"] == 1 and result["rects"] >= crops  # the overview and one box per crop
    assert "correct" in result["text"] and "answered" in result["text"]
    # the model's hostile text is shown as text, never run: the only script is the page's own
    assert result["scripts"] == [MLFLOW_IMAGES] and "<script>alert('x')</script>" in result["text"]
