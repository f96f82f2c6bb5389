"""The tool ablation: tool use per item-run (results, summary, MLflow names, the report's table), and
`-m experiment=tools dry_run=true` pricing its five cells through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from giant.record import ResultRecord
from giant.record.tool_use import tool_use

ROOT = Path(__file__).resolve().parents[2]


def record(key: str, correct: bool, tools: dict[str, int] | None) -> ResultRecord:
    return ResultRecord(
        key=key,
        benchmark="demo",
        run_index=0,
        seed=0,
        truth=1,
        correct=correct,
        status="answered",
        tool_calls=tools,
    )


RECORDS = [
    record("a", True, {"cells": 2, "caption": 1}),
    record("b", True, {"cells": 1}),
    record("c", False, {"caption": 3}),
    record("d", False, None),
    record("e", True, None),
]


def test_tool_use_counts_calls_item_runs_and_correct_answers_per_tool() -> None:
    assert tool_use(RECORDS) == {
        "caption_calls": 4.0,
        "caption_item_runs": 2.0,
        "caption_correct": 1.0,
        "cells_calls": 3.0,
        "cells_item_runs": 2.0,
        "cells_correct": 2.0,
    }
    assert tool_use(RECORDS[3:]) == {}  # no tool called: nothing logged


def test_the_summary_logs_tool_use_under_tool_names() -> None:
    from giant.record.summary import Summary
    from giant.tracking.mlflow_logger import summary_metrics
    from tests.tracking.test_metric_names_pinned import full_summary

    summary: Summary = full_summary(tool_use=tool_use(RECORDS))
    logged = {k: v for k, v in summary_metrics(summary).items() if k.startswith("tool_")}
    assert logged == {f"tool_{name}": value for name, value in tool_use(RECORDS).items()}
    assert not any(k.startswith("tool_") for k in summary_metrics(full_summary()))


def test_the_report_sets_accuracy_with_each_tool_against_without() -> None:
    from giant.report.render import _tool_use

    assert _tool_use(RECORDS) == [
        ("caption", 2, 4, "0.80", "1/2 (50.0%)", "2/3 (66.7%)"),
        ("cells", 2, 3, "0.60", "2/2 (100.0%)", "1/3 (33.3%)"),
    ]


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_the_tools_experiment_prices_every_cell_in_a_dry_run(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIANT_", "MLFLOW_", "HYDRA_", "OPENAI"))}
    env.update(GIANT_CACHE_DIR=str(tmp_path / "cache"), GIANT_OUTPUT_DIR=str(tmp_path / "outputs"))
    sweep = tmp_path / "sweep"
    args = ["-m", "experiment=tools", "provider=openai", "dry_run=true", "limit=1", "tracking.enabled=false"]
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "run_eval.py"), *args, f"hydra.sweep.dir={sweep}"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]  # no key, no weights, no captioner needed to price
    assert "dry-run sweep: 5 cells priced" in proc.stdout
    cells = [yaml.safe_load((sweep / str(n) / ".hydra" / "config.yaml").read_text()) for n in range(5)]
    assert [cfg["agent"]["tools"] for cfg in cells] == [
        [],
        ["conch"],
        ["cells"],
        ["caption"],
        ["cells", "caption"],
    ]
    priced = [json.loads((sweep / str(n) / "dry_run.json").read_text()) for n in range(5)]
    assert all(report["estimate"] for report in priced)
