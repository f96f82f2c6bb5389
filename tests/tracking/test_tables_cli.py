"""scripts/make_tables.py as a real subprocess against a real sqlite store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest

from giant.tracking.names import REPORT_ROLE, ROLE_TAG, tag_filter
from tests.helpers.runs import log_job

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "make_tables.py"


def run_cli(*args: str, uri: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


@pytest.mark.slow
def test_cli_writes_tables_and_logs_report(mlflow_store: tuple[str, str], tmp_path: Path) -> None:
    uri, exp = mlflow_store
    log_job(exp, task="tcga_slidebench", mean=0.589, std=0.035, T=1)
    log_job(exp, task="tcga_slidebench", mean=0.6, std=0.03, T=5, n_items=50, n_scored=48, cost=0.012)
    proc = run_cli("--out", "tables", "--sweep-id", "sw1", "--published", uri=uri, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "| giant (T=5) | gpt-5 | - | - | - | 60.0 ± 3.0 | - |" in proc.stdout
    assert "thumbnail_resolution.png: not drawn" in proc.stdout
    assert "| giant (T=5) | gpt-5 | - | - | - | $0.0120/item, 2/50 failed | - |" in proc.stdout
    out = tmp_path / "tables"
    assert {p.name for p in out.iterdir()} == {
        "table1.md",
        "table1.tex",
        "table1.csv",
        "table1_vs_published.md",
        "table1_cost.md",
        "table1_cells.csv",
        "scaling.png",
    }
    reports = mlflow.search_runs(
        experiment_ids=[exp], filter_string=tag_filter(ROLE_TAG, REPORT_ROLE), output_format="list"
    )
    assert isinstance(reports, list) and len(reports) == 1


@pytest.mark.slow
def test_cli_empty_store_says_what_to_run(mlflow_store: tuple[str, str], tmp_path: Path) -> None:
    uri, _ = mlflow_store
    proc = run_cli(uri=uri, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0 and "make demo" in proc.stderr, proc.stderr
    missing = run_cli(uri=f"sqlite:///{tmp_path / 'absent.db'}", cwd=tmp_path)
    assert missing.returncode == 1 and "no MLflow store" in missing.stderr
    assert missing.stderr.strip().count("\n") == 0
    assert not (tmp_path / "absent.db").exists()
