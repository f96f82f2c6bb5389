"""Never pay twice (issue 12): real runs on synthetic slides through the real openai SDK, with an HTTP
peer that counts what is paid. Each test prints the calls made against the calls the run needed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.llm.ledger import Ledger
from giant.llm.providers.random.provider import format_answer
from giant.llm.types import AnswerSpace
from giant.record.summary import Summary
from tests.eval.runner_fixtures import AGENT, SLIDES, evaluate, make_items
from tests.llm.mock_api import message, responses_body, step_json

CFG = provider_settings("openai", model="gpt-5")
CALLS_PER_EPISODE = AGENT.max_steps  # the server crops until the last step, then answers
SPACE = AnswerSpace(kind="option", n_options=4)


class ModelServer:
    """A Responses API peer: crops while fewer than two earlier turns are in the request, then
    answers (label cycling 1..4, so samples differ). `hang_at` parks that request forever, the way a
    kill finds an episode waiting on the model; requests that got a reply are the paid calls."""

    def __init__(self, hang_at: int | None = None) -> None:
        self.paid = 0
        self.received = 0
        self.hang_at = hang_at
        self.hanging = asyncio.Event()

    async def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.received += 1
        if self.received == self.hang_at:
            self.hanging.set()
            await asyncio.Event().wait()
        body = json.loads(request.content)
        turns = sum(1 for entry in body["input"] if entry.get("role") == "assistant")
        if turns < CALLS_PER_EPISODE - 1:
            action: dict[str, Any] = {"type": "crop", "x": 200 * turns, "y": 0, "width": 600, "height": 600}
        else:
            action = {"type": "answer", "text": format_answer(SPACE, self.paid % 4 + 1, "Seen.")}
        self.paid += 1
        return httpx2.Response(200, json=responses_body(message(step_json(action))))

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handler))


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def run(
    server: ModelServer, ledger: Ledger, items: int, wsi_root: Path, out: Path, **options: Any
) -> Summary:
    async def go() -> Summary:
        provider = build_provider(CFG, http_client=server.client(), ledger=ledger)
        return await evaluate(make_items(items, SLIDES), wsi_root, provider, out, concurrency=1, **options)

    return asyncio.run(go())


def report(name: str, made: int, needed: int) -> None:
    print(f"{name}: {made} calls made, {needed} needed")


def test_killed_episode_replays_its_paid_calls_and_continues(wsi_root: Path, tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger")
    first = ModelServer(hang_at=CALLS_PER_EPISODE)  # killed while waiting on the episode's last call

    async def killed() -> None:
        provider = build_provider(CFG, http_client=first.client(), ledger=ledger)
        task = asyncio.create_task(evaluate(make_items(1, SLIDES), wsi_root, provider, tmp_path / "a"))
        await first.hanging.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(killed())
    assert first.paid == CALLS_PER_EPISODE - 1
    again = ModelServer()
    summary = run(again, ledger, 1, wsi_root, tmp_path / "b")
    report("killed episode rerun", again.paid, 1)
    assert again.paid == 1  # only the call that never got its reply
    assert summary.counts_by_status == {"answered": 1}
    assert summary.totals.calls == CALLS_PER_EPISODE
    assert summary.totals.calls_replayed == CALLS_PER_EPISODE - 1
    assert summary.totals.replayed_cost_usd > 0 and summary.totals.cost_usd is not None
    assert summary.totals.cost_usd == pytest.approx(
        summary.totals.replayed_cost_usd / (CALLS_PER_EPISODE - 1)
    )


def test_pilot_then_full_run_pays_only_for_the_new_items(wsi_root: Path, tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger")
    server = ModelServer()
    run(server, ledger, 2, wsi_root, tmp_path / "pilot")
    pilot = server.paid
    full = run(server, ledger, 4, wsi_root, tmp_path / "full")  # a new folder: only the ledger helps
    report("full run after a pilot of 2", server.paid - pilot, 2 * CALLS_PER_EPISODE)
    assert pilot == 2 * CALLS_PER_EPISODE
    assert server.paid - pilot == 2 * CALLS_PER_EPISODE
    assert full.totals.calls_replayed == 2 * CALLS_PER_EPISODE
    assert full.n_items == 4 and full.counts_by_status == {"answered": 4}


def test_more_runs_per_item_reuse_run_0_and_pay_for_the_others(wsi_root: Path, tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger")
    server = ModelServer()
    run(server, ledger, 2, wsi_root, tmp_path / "one", runs_per_item=1)
    before = server.paid
    three = run(server, ledger, 2, wsi_root, tmp_path / "three", runs_per_item=3)
    report("runs_per_item 1 -> 3", server.paid - before, 2 * 2 * CALLS_PER_EPISODE)
    assert server.paid - before == 2 * 2 * CALLS_PER_EPISODE  # runs 1 and 2 of both items
    assert three.totals.calls_replayed == 2 * CALLS_PER_EPISODE  # run 0 of both items
    results = [json.loads(line) for line in (tmp_path / "three" / "results.jsonl").read_text().splitlines()]
    replayed = {r["run_index"]: r["calls_replayed"] for r in results}
    assert replayed == {0: CALLS_PER_EPISODE, 1: 0, 2: 0}


def test_scoring_settings_alone_call_nothing(wsi_root: Path, tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger")
    server = ModelServer()
    run(server, ledger, 2, wsi_root, tmp_path / "a")
    before = server.paid
    rescored = run(
        server,
        ledger,
        2,
        wsi_root,
        tmp_path / "b",
        resume_from=tmp_path / "a",
        panda_null_as_zero=False,
        bootstrap_replicates=200,
    )
    report("scoring settings changed", server.paid - before, 0)
    assert server.paid == before
    assert rescored.panda_null_as_zero is False and rescored.metric.replicates == 200
    assert rescored.counts_by_status == {"answered": 2}


def test_ledger_off_samples_afresh(wsi_root: Path, tmp_path: Path) -> None:
    server = ModelServer()
    run(server, Ledger(tmp_path / "ledger"), 2, wsi_root, tmp_path / "a")
    before = server.paid
    fresh = run(server, Ledger(tmp_path / "ledger", replay=False), 2, wsi_root, tmp_path / "b")
    report("ledger=false rerun", server.paid - before, 2 * CALLS_PER_EPISODE)
    assert server.paid - before == 2 * CALLS_PER_EPISODE
    assert fresh.totals.calls_replayed == 0
