"""Batch mode (provider.batch=true) through the real openai and anthropic SDKs against a loopback
stub of their batch endpoints: one batch per step round, failures retried, kill -9 and rerun."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from giant.config import RunOptions, shipped
from giant.errors import ConfigError
from giant.eval import runner
from giant.eval.budget import RunBudget
from giant.eval.items import JobData
from giant.eval.progress import Progress
from giant.eval.runner import RunServices, run_eval
from giant.llm.batch import BatchCollector, batch_collector
from giant.llm.batch_records import BatchBook, describe
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider, provider_class
from giant.llm.ledger import Ledger
from giant.llm.ledger import main as ledger_main
from giant.llm.pricing import Pricing
from giant.record import RESULTS_FILE, read_results
from giant.record.summary import Summary
from giant.report.costs import task_costs
from giant.wsi.slide import open_slides
from tests.eval.runner_fixtures import AGENT, SLIDES, evaluate, make_items, write_slides
from tests.llm.batch_job import campaign, settings
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


def test_batch_mode_needs_the_runs_collector_and_ledger(tmp_path: Path) -> None:
    """The collector is handed over, never found: a provider in batch mode built without it (a one-off
    question, scripts/ask.py) or a collector without a ledger is one line naming the fix."""
    cfg = settings("openai", "http://127.0.0.1:9")
    with pytest.raises(ConfigError, match=r"provider=openai: .*set provider.batch=false"):
        build_provider(cfg, ledger=Ledger(tmp_path / "ledger"))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"provider=openai: .*beside the ledger; run it with a ledger"):
        batch_collector(cfg, None)  # type: ignore[arg-type]
    assert batch_collector(provider_settings("openai"), Ledger(tmp_path / "ledger")) is None


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


# The hard budget in batch mode: each stub reply bills 1000 input and 100 output tokens at the model's
# batch rates (openai gpt-5: $0.001125 a call; anthropic claude-opus-4-5: $0.00375), and each call
# reserves its estimated input at the batch rate plus the output it is expected to cost (the dry run's
# prior, then the mean of the settled calls), so the budgets below let a few calls of 4 episodes
# through, then stop in their second or third round.
BUDGET = {"openai": 0.01, "anthropic": 0.03}
BUDGET_ITEMS = 4


@pytest.mark.parametrize("name", PROVIDERS)
def test_budget_stops_batch_rounds_then_a_rerun_continues(
    name: str, wsi_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    budgets: list[RunBudget] = []

    def spy_budget(*args: object, **kwargs: object) -> RunBudget:
        budgets.append(RunBudget(*args, **kwargs))  # type: ignore[arg-type]
        return budgets[-1]

    # As each batch went out: its requests, why it went, the calls holding a reservation, and the
    # dollars spent plus reserved.
    submitted: list[tuple[int, str, int, float]] = []
    submit = BatchCollector._submit

    async def spy_submit(self: BatchCollector, items: list[Any], round_: int, why: str) -> None:
        budget = budgets[-1]
        submitted.append((len(items), why, budget.in_flight, budget.spent + budget.reserved))
        await submit(self, items, round_, why)

    monkeypatch.setattr(runner, "RunBudget", spy_budget)
    monkeypatch.setattr(BatchCollector, "_submit", spy_submit)
    limit = BUDGET[name]
    stub = BatchStub(answer_at=ROUNDS)
    with serving(stub) as url:
        first = asyncio.run(_budgeted(name, url, wsi_root, tmp_path, limit))
        first_batches = len(stub.batches)
        first_submits = len(submitted)  # the rerun's batches go out under its own, larger budget
        first_keys = [r["custom_id"] for b in stub.batches for r in b["requests"]]
        kept = {r.key: r for r in read_results(tmp_path / "out" / RESULTS_FILE)}
        second = asyncio.run(_budgeted(name, url, wsi_root, tmp_path, 100.0, resume=True))
    ledger = Ledger(tmp_path / "ledger")

    # The run stopped at the budget, after some rounds: more than one round's calls, fewer than all.
    assert "budget stop" in first.incomplete_reason and not first.complete
    assert BUDGET_ITEMS < len(first_keys) < BUDGET_ITEMS * ROUNDS
    assert {r.status for r in kept.values()} <= {"answered", "budget_exceeded"}
    assert any(r.status == "budget_exceeded" for r in kept.values())
    # Each request of a batch held its reservation when the batch went out, and the batch fit the budget.
    assert submitted and all(in_flight >= n for n, _, in_flight, _ in submitted)
    assert all(committed <= limit + 1e-9 for *_, committed in submitted[:first_submits])
    # A call the budget held back did not hold up its round until batch_wait_s (30 s here).
    assert {why for _, why, *_ in submitted} == {"round"}
    # spent <= budget: giant.eval.budget bounds any overshoot by how far the calls in flight cost more
    # than they reserved, and each call here costs less than it reserved.
    paid = [ledger.read(key) for key in first_keys]
    assert all(entry is not None and entry.cost_usd for entry in paid)  # every paid reply is in the ledger
    spent = sum(entry.cost_usd or 0.0 for entry in paid if entry is not None)
    assert spent <= limit + 1e-9
    assert first.totals.cost_usd == pytest.approx(spent)  # ... and in the results
    assert budgets[0].spent == pytest.approx(spent)

    # The rerun with a larger budget finishes what the budget stopped and submits nothing twice.
    assert second.complete and second.n_scored == BUDGET_ITEMS and second.incomplete_reason == ""
    assert max(stub.received.values()) == 1  # 0 requests submitted twice
    assert len(stub.received) == BUDGET_ITEMS * ROUNDS  # each step of each episode paid exactly once
    new_keys = [r["custom_id"] for b in stub.batches[first_batches:] for r in b["requests"]]
    new_entries = [ledger.read(key) for key in new_keys]
    assert all(entry is not None for entry in new_entries)
    new_spent = sum(entry.cost_usd or 0.0 for entry in new_entries if entry is not None)
    carried = sum(r.dollars or 0.0 for r in kept.values() if r.status == "answered")
    assert second.totals.cost_usd == pytest.approx(carried + new_spent)


async def _budgeted(
    name: str, url: str, wsi_root: Path, work: Path, budget_usd: float, *, resume: bool = False
) -> Summary:
    """tests.llm.batch_job.campaign with a run budget, priced from the provider's price table."""
    cfg = settings(name, url)
    ledger = Ledger(work / "ledger")
    batches = batch_collector(cfg, ledger)  # type: ignore[arg-type]
    services = RunServices(
        build_provider(cfg, ledger=ledger, batches=batches),  # type: ignore[arg-type]
        batches=batches,
        pricing=Pricing.load(cfg.pricing_file),  # type: ignore[attr-defined]
        image_tokens=provider_class(name).image_tokens,
        progress_bar=False,
    )
    return (
        await run_eval(
            JobData(make_items(BUDGET_ITEMS, SLIDES), wsi_root, "da7a"),
            services,
            agent=AGENT,
            run=shipped(RunOptions, concurrency=BUDGET_ITEMS, budget_usd=budget_usd),
            out_dir=work / "out",
            config_hash="c0ffee",
            resume_from=work / "out" if resume else None,
        )
    ).summary


# A campaign whose concurrency is the whole task: every episode of a round is in its one batch, and the
# open files grow with the distinct slides in flight, not with the episodes waiting on the round.
SCALE_ITEMS = 200
SCALE_SLIDES = 8  # distinct slide files (copies of the module's two), 25 episodes on each
SCALE_ROUNDS = 2  # the stub's model answers at step 2
FD_SLACK = 24  # the event loop, the stub's server and the client's sockets, results.jsonl, ledger writes


@pytest.mark.slow
def test_whole_task_in_flight_one_batch_per_round_fds_per_slide(wsi_root: Path, tmp_path: Path) -> None:
    fd_dir = Path("/proc/self/fd")
    if not fd_dir.is_dir():
        pytest.skip("counts open files in /proc/self/fd (Linux)")
    root = tmp_path / "wsi"
    root.mkdir()
    names = [f"slide{i}.svs" for i in range(SCALE_SLIDES)]
    for i, slide in enumerate(names):
        shutil.copyfile(wsi_root / SLIDES[i % len(SLIDES)], root / slide)
    stub = BatchStub(answer_at=SCALE_ROUNDS)
    with serving(stub) as url:
        cfg, ledger = settings("openai", url), Ledger(tmp_path / "ledger")
        batches = batch_collector(cfg, ledger)  # type: ignore[arg-type]
        provider = build_provider(cfg, ledger=ledger, batches=batches)  # type: ignore[arg-type]
        items = make_items(SCALE_ITEMS, names)
        with _peaks(fd_dir) as peak:
            out = tmp_path / "out"
            summary = asyncio.run(
                evaluate(items, root, provider, out, batches=batches, concurrency=SCALE_ITEMS)
            )
    assert summary.n_scored == SCALE_ITEMS and summary.incomplete_reason == ""
    # One batch per round, each carrying the call of every episode in flight.
    assert [len(b["requests"]) for b in stub.batches] == [SCALE_ITEMS] * SCALE_ROUNDS
    assert max(stub.received.values()) == 1
    # The episodes of a slide share its one open handle: open files track the slides, not the episodes.
    assert peak["slides"] <= SCALE_SLIDES
    assert peak["fds"] - peak["base"] <= FD_SLACK + 2 * SCALE_SLIDES < SCALE_ITEMS
    assert open_slides() == 0  # every slide closed with its last episode


@contextmanager
def _peaks(fd_dir: Path) -> Iterator[dict[str, int]]:
    """The most files and shared slides open at once while the block runs, sampled every 5 ms."""
    peak = {"base": len(os.listdir(fd_dir)), "fds": 0, "slides": 0}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak["fds"] = max(peak["fds"], len(os.listdir(fd_dir)))
            peak["slides"] = max(peak["slides"], open_slides())
            done.wait(0.005)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        done.set()
        thread.join()
