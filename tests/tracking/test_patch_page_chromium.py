"""A patch-mode trajectory page in headless Chromium (the session's, tests/browser.py): every patch box
drawn on the slide's map, and each patch image with the µm/px it was shown at."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from giant.agent.episode import run_episode
from giant.agent.modes import parse_agent
from giant.config import RunSettings  # noqa: F401  (registers the composed conf the agent defaults come from)
from giant.core import Item
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.tracking.viewer import write_html
from giant.wsi.synthetic import write_synthetic_slide
from tests.browser import serve
from tests.helpers.episodes import HARNESS, apart, harness_result

ITEM = Item(
    benchmark="tcga",
    benchmark_id="1",
    image_path="p.svs",
    prompt='Which cancer?\n1. a\n2. b\nAnswer as {"answer": N}.',
    options=("a", "b"),
    truth=1,
    metric="accuracy",
)


@pytest.mark.slow
@pytest.mark.parametrize("inference", ["joint", "vote"])
def test_patch_boxes_and_mpp_on_the_page(browser: Any, tmp_path: Path, inference: str) -> None:
    slide = write_synthetic_slide(tmp_path / "p.svs", 6000, 4000, seed=4, mpp=0.25)
    out = tmp_path / "traj"
    cfg = parse_agent({"mode": "patch", "patch_count": 4, "patch_mpp": 1.0, "inference": inference})
    provider = build_provider(provider_settings("random", seed=0))
    traj = apart(run_episode(ITEM, slide, provider, cfg, out_dir=out))
    assert traj.status == "answered" and traj.patches is not None and traj.patches.sent == 4
    write_html(out, truth="1", correct=True)
    (tmp_path / "harness.html").write_text(HARNESS, encoding="utf-8")
    with serve(tmp_path) as base:
        result = harness_result(browser, base)
    assert result["svgImages"] == 1  # the slide's map, which the model never saw
    assert result["imgs"] == result["decoded"] == 4  # every patch image decoded
    # one box per patch, titled with the patch's level-0 box
    assert sorted(result["titles"]) == sorted(f"patch {n}: {r.read}" for n, r in enumerate(traj.regions, 1))
    text = result["text"]
    assert "Patches on the slide" in text and "4 of 4 patches sent, each 896 level-0 px" in text
    assert text.count("1.00 µm/px (~10x)") >= 4  # each patch with its magnification
    assert "0.25 µm/px (~40x)" in text  # the slide's level 0
