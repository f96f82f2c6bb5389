"""provider.batch=true on Gemini's Batch API (inlined requests) through the real google-genai SDK against
the loopback Gemini server, with the guarantees and the tests of the OpenAI and Anthropic batches
(tests/llm/test_batch.py): one batch per step round, failures retried, a lost create looked up, a
kill -9 with a batch in flight reattached, every reply in the ledger before an episode sees it."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

from giant.llm.batch_records import BatchBook
from giant.llm.ledger import Ledger
from tests.eval.runner_fixtures import SLIDES, write_slides
from tests.llm.batch_job import campaign
from tests.llm.gemini_server import KEY, GeminiServer, serving
from tests.llm.test_batch import _job, _until

ROUNDS = 3  # the server's model answers at step 3


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)


@pytest.fixture(scope="module")
def wsi_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_slides(tmp_path_factory.mktemp("wsi"), SLIDES)


def _keys(server: GeminiServer, batch: int) -> list[str]:
    return [line["metadata"]["key"] for line in server.batches[batch]["lines"]]


def test_one_batch_per_round_then_a_free_replay(wsi_root: Path, tmp_path: Path) -> None:
    server = GeminiServer(answer_at=ROUNDS, polls=2)
    with serving(server) as url:
        summary = asyncio.run(campaign("gemini", url, wsi_root, tmp_path, 4))
        again = asyncio.run(campaign("gemini", url, wsi_root, tmp_path, 4, out="again"))
    assert summary.n_scored == 4 and summary.incomplete_reason == ""
    assert [len(b["lines"]) for b in server.batches] == [4] * ROUNDS and server.requests == []
    assert max(server.batch_keys.values()) == 1 and server.rejected == []  # signatures re-sent in batches
    assert summary.totals.calls_batch == 4 * ROUNDS
    assert summary.totals.cost_batch_usd == pytest.approx(summary.totals.cost_usd)
    assert again.n_scored == 4 and len(server.batches) == ROUNDS and again.totals.cost_usd == 0
    records = BatchBook(tmp_path / "ledger" / "batches").records()
    assert [f"batches/{r.batch_id}" for r in records] == [b["id"] for b in server.batches]


def test_a_failed_request_is_retried_in_the_next_round(wsi_root: Path, tmp_path: Path) -> None:
    server = GeminiServer(answer_at=ROUNDS)
    server.fail_once = {5}  # the second batch's first line answers 503 (rpc UNAVAILABLE) once
    with serving(server) as url:
        summary = asyncio.run(campaign("gemini", url, wsi_root, tmp_path, 4))
    counts = sorted(server.batch_keys.values())
    assert counts.count(2) == 1 and max(counts) == 2 and summary.n_scored == 4
    assert [len(b["lines"]) for b in server.batches] == [4, 4, 4, 1]


def test_an_expired_batch_is_sent_again(wsi_root: Path, tmp_path: Path) -> None:
    server = GeminiServer(answer_at=ROUNDS)
    server.expire = {1}
    with serving(server) as url:
        summary = asyncio.run(campaign("gemini", url, wsi_root, tmp_path, 3))
    assert [len(b["lines"]) for b in server.batches] == [3] * (ROUNDS + 1) and summary.n_scored == 3
    assert all(server.batch_keys[key] == 2 for key in _keys(server, 0))


def test_kill_9_with_a_batch_in_flight_then_rerun(wsi_root: Path, tmp_path: Path) -> None:
    server = GeminiServer(answer_at=ROUNDS)
    server.hold.set()
    with serving(server) as url:
        job = _job("gemini", url, wsi_root, tmp_path, 4)
        _until(job, lambda: bool(server.batches) and server.batches[0]["polls"] >= 2)
        job.send_signal(signal.SIGKILL)
        job.wait()
        assert len(server.batches) == 1
        server.hold.clear()
        summary = asyncio.run(campaign("gemini", url, wsi_root, tmp_path, 4, resume=True))
    assert max(server.batch_keys.values()) == 1  # 0 requests submitted twice
    assert len(server.batches) == ROUNDS and summary.n_scored == 4 and summary.incomplete_reason == ""


def test_a_dropped_create_is_found_not_sent_again(wsi_root: Path, tmp_path: Path) -> None:
    server = GeminiServer(answer_at=ROUNDS)
    server.drop_create = {1}
    with serving(server) as url:
        summary = asyncio.run(campaign("gemini", url, wsi_root, tmp_path, 3))
    assert max(server.batch_keys.values()) == 1 and len(server.batches) == ROUNDS and summary.n_scored == 3


def test_kill_9_while_creating_then_rerun(wsi_root: Path, tmp_path: Path) -> None:
    server = GeminiServer(answer_at=ROUNDS)
    server.stall_create.set()
    server.drop_create = {1}
    with serving(server) as url:
        job = _job("gemini", url, wsi_root, tmp_path, 4)
        _until(job, lambda: len(server.batches) == 1)
        job.send_signal(signal.SIGKILL)
        job.wait()
        server.stall_create.clear()
        pending = BatchBook(tmp_path / "ledger" / "batches").records()
        assert [r.batch_id for r in pending] == [None]
        summary = asyncio.run(campaign("gemini", url, wsi_root, tmp_path, 4, resume=True))
    assert max(server.batch_keys.values()) == 1 and len(server.batches) == ROUNDS and summary.n_scored == 4
    records = BatchBook(tmp_path / "ledger" / "batches").records()
    assert records[0].record_id == pending[0].record_id and records[0].batch_id == "b1"


def test_replies_whose_episode_is_gone_are_kept(wsi_root: Path, tmp_path: Path) -> None:
    server = GeminiServer(answer_at=ROUNDS)
    server.hold.set()
    with serving(server) as url:
        job = _job("gemini", url, wsi_root, tmp_path, 4)
        _until(job, lambda: bool(server.batches) and server.batches[0]["polls"] >= 1)
        job.send_signal(signal.SIGKILL)
        job.wait()
        server.hold.clear()
        asyncio.run(campaign("gemini", url, wsi_root, tmp_path, 2, out="fewer"))
        ledger = Ledger(tmp_path / "ledger")
        assert all(ledger.read(key) is not None for key in _keys(server, 0))
        assert BatchBook(tmp_path / "ledger" / "batches").records()[0].collected
        summary = asyncio.run(campaign("gemini", url, wsi_root, tmp_path, 4, out="all"))
    assert max(server.batch_keys.values()) == 1 and summary.n_scored == 4
