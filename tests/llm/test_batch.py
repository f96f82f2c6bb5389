"""Batch mode (provider.batch=true) through the real openai and anthropic SDKs against a loopback
stub of their batch endpoints: one batch per step round, failures retried, kill -9 and rerun."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from giant.llm.batch_records import BatchBook, describe
from giant.llm.ledger import main as ledger_main
from tests.eval.runner_fixtures import SLIDES, write_slides
from tests.llm.batch_job import campaign
from tests.llm.batch_stub import BatchStub, serving

ROUNDS = 3  # the stub's model answers at step 3
PROVIDERS = ["openai", "anthropic"]


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-batch-0123456789")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-batch-0123456789")


@pytest.fixture(scope="module")
def wsi_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_slides(tmp_path_factory.mktemp("wsi"), SLIDES)


@pytest.mark.parametrize("name", PROVIDERS)
def test_one_batch_per_round(name: str, wsi_root: Path, tmp_path: Path) -> None:
    stub = BatchStub(answer_at=ROUNDS, polls=3)  # each batch takes a few polls
    with serving(stub) as url:
        summary = asyncio.run(campaign(name, url, wsi_root, tmp_path, 6))
        assert len(stub.batches) == ROUNDS  # one batch per step round
        # A fresh run of the same campaign replays every call from the ledger: nothing is submitted.
        again = asyncio.run(campaign(name, url, wsi_root, tmp_path, 6, out="again"))
    assert summary.n_scored == 6 and summary.incomplete_reason == ""
    assert [len(b["requests"]) for b in stub.batches] == [6] * ROUNDS
    assert max(stub.received.values()) == 1  # no request submitted twice
    assert summary.totals.cost_usd is not None and summary.totals.cost_usd > 0
    assert again.n_scored == 6 and len(stub.batches) == ROUNDS and again.totals.cost_usd == 0
    records = BatchBook(tmp_path / "ledger" / "batches").records()
    assert [r.batch_id for r in records] == [b["id"] for b in stub.batches]
    assert all(r.state in ("completed", "ended") for r in records)
    assert ledger_main([str(tmp_path / "ledger")]) == 0
    assert len(describe(tmp_path / "ledger" / "batches")) == ROUNDS


@pytest.mark.parametrize("name", PROVIDERS)
def test_request_failure_is_retried(name: str, wsi_root: Path, tmp_path: Path) -> None:
    stub = BatchStub(answer_at=ROUNDS)
    stub.fail_once = {5}  # the second batch's first request gets a 500 once
    with serving(stub) as url:
        asyncio.run(campaign(name, url, wsi_root, tmp_path, 4))
    counts = sorted(stub.received.values())
    assert counts.count(2) == 1 and max(counts) == 2  # only the failed request went again
    # Its retry rode with the others' next round; that episode's last call then went alone.
    assert [len(b["requests"]) for b in stub.batches] == [4, 4, 4, 1]


@pytest.mark.parametrize("name", PROVIDERS)
def test_expired_batch_is_sent_again(name: str, wsi_root: Path, tmp_path: Path) -> None:
    stub = BatchStub(answer_at=ROUNDS)
    stub.expire = {1}
    with serving(stub) as url:
        asyncio.run(campaign(name, url, wsi_root, tmp_path, 3))
    assert len(stub.batches) == ROUNDS + 1
    assert [len(b["requests"]) for b in stub.batches] == [3] * (ROUNDS + 1)
    expired = {request["custom_id"] for request in stub.batches[0]["requests"]}
    assert all(stub.received[key] == 2 for key in expired)  # round 1 went again, in batch 2


@pytest.mark.parametrize("name", PROVIDERS)
def test_kill_9_with_batch_in_flight_then_rerun(name: str, wsi_root: Path, tmp_path: Path) -> None:
    stub = BatchStub(answer_at=ROUNDS)
    stub.hold.set()  # the batches stay in flight until released
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    with serving(stub) as url:
        job = subprocess.Popen(
            [sys.executable, "-m", "tests.llm.batch_job", name, url, str(wsi_root), str(tmp_path), "4"],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while not (stub.batches and stub.batches[0]["polls"] >= 2):  # round 1 submitted and polled
            assert time.monotonic() < deadline and job.poll() is None
            time.sleep(0.05)
        job.send_signal(signal.SIGKILL)
        job.wait()
        assert len(stub.batches) == 1
        stub.hold.clear()  # the batch ends while no job is running
        summary = asyncio.run(campaign(name, url, wsi_root, tmp_path, 4, resume=True))
    assert max(stub.received.values()) == 1  # 0 requests submitted twice
    assert len(stub.batches) == ROUNDS  # the rerun read round 1 from the batch in flight
    assert summary.n_scored == 4 and summary.incomplete_reason == ""
