"""The patch-design study's cells against GIANT x1 and x5 on the same items, through the compare
machinery: each cell is named by its four factors, and every pair gets its paired tests."""

from __future__ import annotations

from typing import Any

from giant.compare.pairs import compare_runs
from giant.compare.render import to_markdown
from giant.compare.sources import RunData, outcomes
from giant.record import ResultRecord

GIANT = {"mode": "giant", "max_steps": 20, "crop_size": 1000}
CELL = {"mode": "patch", "max_steps": 1, "crop_size": 1000, "patch_count": 30, "patch_size": 1024}


def run(name: str, agent: dict[str, Any], right: set[int], k: int = 1) -> RunData:
    """40 items, truth 1; the items in `right` answered 1 by every run, the rest 2."""
    records = [
        ResultRecord(
            key=f"tcga/{i}",
            benchmark="tcga",
            run_index=r,
            seed=0,
            label=1 if i in right else 2,
            truth=1,
            correct=i in right,
            status="answered",
        )
        for i in range(40)
        for r in range(k)
    ]
    return RunData(
        where=name,
        task="tcga",
        metric_name="accuracy",
        runs_per_item=k,
        tie_rule="lowest_run_index",
        config={"agent": agent, "provider": {"model": "gpt-5"}, "seed": 0},
        items=outcomes(records, k, "lowest_run_index"),
    )


def test_study_cells_against_giant_x1_and_x5() -> None:
    runs = [
        run("giant", GIANT, set(range(13))),
        run("giant x5", GIANT, set(range(12)), k=5),
        run("joint", {**CELL, "inference": "joint", "patch_mpp": 2.0}, set(range(5, 21))),
        run("vote", {**CELL, "patch_mpp": 2.0}, set(range(6))),
    ]
    comparison = compare_runs(runs, replicates=200, seed=0)
    names = [entry.name for entry in comparison.runs]
    assert names[2] == "patch T=1 S=1000 gpt-5 (joint, patch_count=30, patch_size=1024, 2.00 µm/px (~5x))"
    assert names[3] == "patch T=1 S=1000 gpt-5 (vote, patch_count=30, patch_size=1024, 2.00 µm/px (~5x))"
    assert names[1].startswith("giant x5 T=20") and "(" not in names[0]
    assert len(comparison.pairs) == 6 and all(p.n_common == 40 for p in comparison.pairs)
    joint_vs_giant = next(p for p in comparison.pairs if (p.a, p.b) == ("A", "C"))
    # giant right on 0..12, the joint cell on 5..20: 5 items only giant, 8 only the cell
    assert (joint_vs_giant.a_only_right, joint_vs_giant.b_only_right) == (5, 8)
    assert joint_vs_giant.p_value is not None and joint_vs_giant.p_holm is not None
    assert "2.00 µm/px (~5x)" in to_markdown(comparison)
