"""Batch mode (provider.batch=true) through the real openai and anthropic SDKs against a loopback
stub of their batch endpoints: one batch per step round, failures retried, kill -9 and rerun."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from giant.eval.progress import Progress
from giant.llm.batch_records import BatchBook, describe
from giant.llm.ledger import Ledger
from giant.llm.ledger import main as ledger_main
from giant.record import RESULTS_FILE, read_results
from giant.report.costs import task_costs
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
    # Every paid call was billed at the batch tier, and the run says so (summary.json, MLflow, report).
    assert summary.totals.calls_batch == 6 * ROUNDS and summary.totals.calls_flex == 0
    assert summary.totals.cost_batch_usd == pytest.approx(summary.totals.cost_usd)
    row = task_costs(read_results(tmp_path / "out" / RESULTS_FILE))[-1]
    assert row.tier_calls == f"0 / 0 / {6 * ROUNDS}"
    assert row.tier_costs == f"$0.0000 / $0.0000 / ${summary.totals.cost_usd:.4f}"
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
    with serving(stub) as url:
        job = _job(name, url, wsi_root, tmp_path, 4)
        _until(job, lambda: bool(stub.batches) and stub.batches[0]["polls"] >= 2)  # submitted, polled
        job.send_signal(signal.SIGKILL)
        job.wait()
        assert len(stub.batches) == 1
        stub.hold.clear()  # the batch ends while no job is running
        summary = asyncio.run(campaign(name, url, wsi_root, tmp_path, 4, resume=True))
    assert max(stub.received.values()) == 1  # 0 requests submitted twice
    assert len(stub.batches) == ROUNDS  # the rerun read round 1 from the batch in flight
    assert summary.n_scored == 4 and summary.incomplete_reason == ""


def _job(name: str, url: str, wsi_root: Path, work: Path, n_items: int) -> subprocess.Popen[bytes]:
    """tests.llm.batch_job in a process of its own, for a kill -9."""
    root = Path(__file__).resolve().parents[2]
    return subprocess.Popen(
        [sys.executable, "-m", "tests.llm.batch_job", name, url, str(wsi_root), str(work), str(n_items)],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _until(job: subprocess.Popen[bytes], done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert time.monotonic() < deadline and job.poll() is None
        time.sleep(0.05)


@pytest.mark.parametrize("name", PROVIDERS)
def test_dropped_create_is_found_not_sent_again(name: str, wsi_root: Path, tmp_path: Path) -> None:
    stub = BatchStub(answer_at=ROUNDS)
    stub.drop_create = {1}  # the batch is made, the reply to its create never arrives
    with serving(stub) as url:
        summary = asyncio.run(campaign(name, url, wsi_root, tmp_path, 3))
    assert max(stub.received.values()) == 1  # looked up, not submitted again
    assert len(stub.batches) == ROUNDS and summary.n_scored == 3
    records = BatchBook(tmp_path / "ledger" / "batches").records()
    assert [r.batch_id for r in records] == [b["id"] for b in stub.batches]


@pytest.mark.parametrize("name", PROVIDERS)
def test_kill_9_while_creating_then_rerun(name: str, wsi_root: Path, tmp_path: Path) -> None:
    stub = BatchStub(answer_at=ROUNDS)
    stub.stall_create.set()  # the create request stays on the wire ...
    stub.drop_create = {1}  # ... and is never answered
    with serving(stub) as url:
        job = _job(name, url, wsi_root, tmp_path, 4)
        _until(job, lambda: len(stub.batches) == 1)  # the API made batch 1; its id never came back
        job.send_signal(signal.SIGKILL)
        job.wait()
        stub.stall_create.clear()
        pending = BatchBook(tmp_path / "ledger" / "batches").records()
        assert [r.batch_id for r in pending] == [None]
        summary = asyncio.run(campaign(name, url, wsi_root, tmp_path, 4, resume=True))
    assert max(stub.received.values()) == 1  # the rerun found batch 1 instead of submitting it again
    assert len(stub.batches) == ROUNDS and summary.n_scored == 4
    records = BatchBook(tmp_path / "ledger" / "batches").records()
    assert records[0].record_id == pending[0].record_id and records[0].batch_id == "batch_1"


@pytest.mark.parametrize("name", PROVIDERS)
def test_replies_whose_episode_is_gone_are_kept(name: str, wsi_root: Path, tmp_path: Path) -> None:
    stub = BatchStub(answer_at=ROUNDS)
    stub.hold.set()
    with serving(stub) as url:
        job = _job(name, url, wsi_root, tmp_path, 4)
        _until(job, lambda: bool(stub.batches) and stub.batches[0]["polls"] >= 1)
        job.send_signal(signal.SIGKILL)
        job.wait()
        stub.hold.clear()
        # The rerun asks for 2 of the 4 items: the replies of the other two still reach the ledger.
        asyncio.run(campaign(name, url, wsi_root, tmp_path, 2, out="fewer"))
        ledger = Ledger(tmp_path / "ledger")
        first = [r["custom_id"] for r in stub.batches[0]["requests"]]
        assert all(ledger.read(key) is not None for key in first)
        assert BatchBook(tmp_path / "ledger" / "batches").records()[0].collected
        # The full campaign later takes the kept replies: nothing is submitted twice.
        summary = asyncio.run(campaign(name, url, wsi_root, tmp_path, 4, out="all"))
    assert max(stub.received.values()) == 1 and summary.n_scored == 4


@pytest.mark.parametrize("name", PROVIDERS)
def test_cancelled_batch_keeps_its_answers(name: str, wsi_root: Path, tmp_path: Path) -> None:
    stub = BatchStub(answer_at=ROUNDS)
    stub.cancel = {1}  # cancelled with its first half answered
    with serving(stub) as url:
        summary = asyncio.run(campaign(name, url, wsi_root, tmp_path, 4))
    first = [r["custom_id"] for r in stub.batches[0]["requests"]]
    assert [stub.received[key] for key in first] == [1, 1, 2, 2]  # only the unanswered went again
    assert [len(b["requests"]) for b in stub.batches] == [4, 4, 4, 2]
    assert summary.n_scored == 4 and summary.incomplete_reason == ""


@pytest.mark.parametrize("name", PROVIDERS)
def test_progress_bar_names_the_round_in_flight(
    name: str, wsi_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown: list[str] = []
    show = Progress._show

    def spy(self: Progress, *, refresh: bool = False) -> None:
        show(self, refresh=refresh)
        shown.append(str(self._bar.postfix))

    monkeypatch.setattr(Progress, "_show", spy)
    stub = BatchStub(answer_at=ROUNDS, polls=2)
    with serving(stub) as url:
        summary = asyncio.run(campaign(name, url, wsi_root, tmp_path, 3, progress=True))
    assert summary.n_scored == 3
    notes = [note.partition(" batch ")[2] for note in shown]
    assert any(note.startswith("round 1: 3 requests, waited ") for note in notes)
    assert any(note.startswith("round 3: 3 requests, waited ") for note in notes)
    assert not notes[-1]  # nothing in flight at the end
