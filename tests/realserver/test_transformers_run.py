"""The issue's done-when against the real `transformers serve`: a 3-item demo job at T=3 with the
preflight on (giant.evaluate, the job scripts/run_eval.py runs, in this process) ends with every item
measured and its calls and tokens recorded; the same job again sends the server nothing (the run is
kept, the preflight is not needed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import giant
from giant.eval.causes import record_cause
from giant.llm.serve import Server
from giant.record import read_results
from giant.record.summary import Summary
from tests.realserver.served import offline_env, requests_seen

# One worker runs every real-server test (make test: --dist loadgroup), so they share one server.
pytestmark = pytest.mark.xdist_group("realserver")
NOT_MEASURED = {"skipped", "budget_exceeded", "runner_error", "timeout", "transient", "provider_error"}


def run(tmp: Path, server: Server, model: Path, folder: Path) -> Summary:
    overrides = [
        "provider=openai_compatible",
        f"provider.model={model}",
        f"provider.base_url={server.base_url}",
        "provider.max_tokens=16",  # a random model's reply is cut there: a parse error, quickly
        "agent.max_steps=3",
        "limit=3",
        f"paths.cache_dir={tmp / 'cache'}",
        f"tracking.uri=sqlite:///{tmp / 'mlflow.db'}",
    ]
    summary = giant.evaluate(overrides, output_dir=folder)
    assert summary is not None
    return summary


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_a_demo_run_measures_every_item_and_its_rerun_sends_nothing(
    tserve: Server,
    tiny_vlm: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for name in [name for name in os.environ if name.startswith(("MLFLOW_", "GIANT_", "HYDRA_"))]:
        monkeypatch.delenv(name)
    for name, value in offline_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    chats, lists = requests_seen(tserve)
    with caplog.at_level("WARNING", logger="giant.eval.context_fit"):
        summary = run(tmp_path, tserve, tiny_vlm, tmp_path / "first")
    records = read_results(tmp_path / "first" / "results.jsonl")
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
    assert "not confirmed: the context length" in caplog.text

    again = run(tmp_path, tserve, tiny_vlm, tmp_path / "again")
    assert requests_seen(tserve) == (sent, listed)
    assert again.n_items == 3 and again.complete
