"""The µm/px of every image shown, from the episode's regions through results.jsonl to summary.json and
the MLflow metrics, with the usual objective names beside (giant.wsi.magnification)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from giant.agent.modes import parse_agent
from giant.core import Box
from giant.record import JobLayout, read_results
from giant.tracking.mlflow_logger import summary_metrics
from giant.tracking.names import MPP_FINEST_METRIC, MPP_MEDIAN_METRIC
from giant.wsi.magnification import mpp_text, objective, objective_band, shown_mpp

from .runner_fixtures import evaluate, make_items, random_provider, write_slides


def test_the_rule_and_its_names() -> None:
    assert shown_mpp(0.25, Box(x=0, y=0, w=1792, h=1000), 224, 125) == pytest.approx(2.0)
    assert shown_mpp(None, Box(x=0, y=0, w=10, h=10), 10, 10) is None
    assert [objective(m) for m in (0.25, 0.5, 1.0, 2.0, 4.0)] == ["~40x", "~20x", "~10x", "~5x", "~2.5x"]
    assert objective_band(0.4942) == "~20x (0.50 µm/px)" and objective_band(0.27) == "~40x (0.25 µm/px)"
    assert mpp_text(None) == "unknown" and mpp_text(2.0) == "2.00 µm/px (~5x)"


def test_summary_and_mlflow_carry_the_images_mpp(tmp_path: Path) -> None:
    root = write_slides(tmp_path / "wsi", ["a.svs"])  # level 0 at 0.25 µm/px
    items = make_items(2, ["a.svs"])
    agent = parse_agent({"mode": "patch", "patch_count": 3, "patch_mpp": 1.0, "inference": "joint"})
    out = tmp_path / "job"
    summary = asyncio.run(evaluate(items, root, random_provider(), out, agent=agent))
    records = read_results(JobLayout(out).results)
    assert all(r.mpps == pytest.approx([1.0, 1.0, 1.0]) for r in records)
    seen = summary.magnification
    assert seen is not None and (seen.images, seen.unknown) == (6, 0)
    assert seen.finest_mpp == pytest.approx(1.0) and seen.median_mpp == pytest.approx(1.0)
    assert seen.by_objective == {"~10x (1.00 µm/px)": 6}
    written = json.loads(JobLayout(out).summary.read_text())
    assert written["magnification"]["by_objective"] == {"~10x (1.00 µm/px)": 6}
    metrics = summary_metrics(summary)
    assert metrics[MPP_FINEST_METRIC] == pytest.approx(1.0) and metrics[MPP_MEDIAN_METRIC] == pytest.approx(
        1.0
    )
