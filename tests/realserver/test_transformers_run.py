"""The issue's done-when, through the real CLI against the real `transformers serve`: a 3-item demo
run at T=3 with the preflight on exits 0 with every item measured and its calls and tokens recorded;
the same command again sends the server nothing (the run is kept, the preflight is not needed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from giant.eval.causes import record_cause
from giant.llm.serve import Server
from giant.record import read_results
from giant.record.summary import Summary
from tests.realserver.served import offline_env, requests_seen

# One worker runs every real-server test (make test: --dist loadgroup), so they share one server.
pytestmark = pytest.mark.xdist_group("realserver")
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "run_eval.py"
TIMEOUT = 600
NOT_MEASURED = {"skipped", "budget_exceeded", "runner_error", "timeout", "transient", "provider_error"}


def run(tmp: Path, server: Server, model: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "GIANT_", "HYDRA_"))}
    env.update(
        offline_env(tmp),
        GIANT_CACHE_DIR=str(tmp / "cache"),
        GIANT_OUTPUT_DIR=str(tmp / "outputs"),
        GIANT_MULTIRUN_DIR=str(tmp / "multirun"),
    )
    args = [
        "provider=openai_compatible",
        f"provider.model={model}",
        f"provider.base_url={server.base_url}",
        "provider.max_tokens=16",  # a random model's reply is cut there: a parse error, quickly
        "agent.max_steps=3",
        "limit=3",
        f"tracking.uri=sqlite:///{tmp / 'mlflow.db'}",
    ]
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def _out_dir(proc: subprocess.CompletedProcess[str]) -> Path:
    line = next(line for line in proc.stdout.splitlines() if " -> " in line)
    return Path(line.split(" -> ")[1].split(";")[0].strip())


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_a_demo_run_measures_every_item_and_its_rerun_sends_nothing(
    tserve: Server, tiny_vlm: Path, tmp_path: Path
) -> None:
    chats, lists = requests_seen(tserve)
    first = run(tmp_path, tserve, tiny_vlm)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-3000:]
    out = _out_dir(first)
    summary = Summary.model_validate_json((out / "summary.json").read_text())
    records = read_results(out / "results.jsonl")
    assert summary.complete and summary.n_items == 3 and not summary.setup_causes
    # a measurement: the episode ended on the model's side (an answer, or a model failure with its reason)
    assert len(records) == 3, records
    assert all(r.status not in NOT_MEASURED and record_cause(r) is None for r in records), records
    totals = summary.totals
    assert totals.calls == sum(r.calls for r in records) and totals.calls >= 3
    assert totals.input_tokens > 3 * 16  # every prompt carries at least the overview's image tokens
    sent, listed = requests_seen(tserve)
    # the preflight's one image request, then every call the ledger did not already hold
    assert (sent - chats, listed - lists) == (1 + totals.calls - totals.calls_replayed, 1)
    assert "not confirmed: the context length" in first.stderr + first.stdout

    again = run(tmp_path, tserve, tiny_vlm)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-3000:]
    assert requests_seen(tserve) == (sent, listed)
    rerun = json.loads((_out_dir(again) / "summary.json").read_text())
    assert rerun["n_items"] == 3 and rerun["complete"]
