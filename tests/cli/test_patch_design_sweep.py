"""`-m experiment=patch_design dry_run=true` through the real CLI (a subprocess, Hydra's sweeper): every
cell of the study priced before anything is paid, with a warning where a joint call carries more
images than the provider takes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from giant.llm.request_limits import ANTHROPIC_LIMITS

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 600


@pytest.mark.subprocess_job
def test_the_study_sweep_prices_every_cell(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "GIANT_", "HYDRA_"))}
    env.update(GIANT_CACHE_DIR=str(tmp_path / "cache"), GIANT_MULTIRUN_DIR=str(tmp_path / "multirun"))
    too_many = ANTHROPIC_LIMITS.images + 20
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "run_eval.py"),
            "-m",
            "experiment=patch_design",
            "provider=anthropic",
            f"agent.patch_count=10,{too_many}",  # a command-line level replaces the preset's
            "dry_run=true",
            "tracking.enabled=false",
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = proc.stdout[proc.stdout.index("dry-run sweep:") :]
    assert "dry-run sweep: 16 cells priced" in table
    cells = re.findall(
        r"^  cell (\S+) \(claude-opus-4-5\): (\d+) image\(s\) of (\d+) px per call, (\d+) call", table, re.M
    )
    assert len(cells) == 16 and len({name for name, *_ in cells}) == 16
    for name, images, side, calls in cells:
        count = int(re.search(r"patch-(\d+)x", name).group(1))  # type: ignore[union-attr]
        joint = name.endswith("-joint-distinct")
        assert (int(images), int(calls)) == ((count, 1) if joint else (1, count)), name
        assert side == re.search(r"x(\d+)-", name).group(1)  # type: ignore[union-attr]
    costs = [
        float(c.replace(",", "")) for c in re.findall(r"^  cell .*expected standard \$([\d,.]+)", table, re.M)
    ]
    total = float(
        re.search(r"the whole sweep, expected: standard \$([\d,.]+)", table).group(1).replace(",", "")
    )  # type: ignore[union-attr]
    assert len(costs) == 16 and min(costs) > 0 and abs(sum(costs) - total) < 0.02
    # a joint call of more images than Anthropic takes is warned about, under its cell and no other
    warned = re.findall(
        r"^  cell (\S+) .*\n    WARNING: (\d+) images in one request: the Anthropic API takes at most 100",
        table,
        re.M,
    )
    assert sorted(name for name, _ in warned) == sorted(
        name for name, *_ in cells if name.startswith(f"demo-patch-{too_many}x") and "joint" in name
    )
    assert len(warned) == 4
    # and 120 patches of 1024 px are more base64 than its 32 MB request: those two cells say so too
    heavy = re.findall(r"WARNING: ~(\d+) MB of base64 images in one request", table)
    assert len(heavy) == 2 and all(int(mb) > ANTHROPIC_LIMITS.payload_mb for mb in heavy)
    assert table.count("WARNING") == 6
    # each cell's dry_run.json holds its plan
    reports = [json.loads(p.read_text()) for p in sorted((tmp_path / "sweep").glob("*/dry_run.json"))]
    assert len(reports) == 16 and all(r["no_mpp"] == [] for r in reports)  # the demo slides carry an mpp
    assert {r["estimate"]["images_per_call"] for r in reports} == {1, 10, too_many}
