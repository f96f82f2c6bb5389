"""Nothing unmeasured is ever a score (issue 39): an item-run that a server fault, a hang or a bug ended
is counted unmeasured, the job is incomplete, and the same run once the server is healthy measures
exactly those item-runs and pays nothing twice.

The real runner on real synthetic slides, the real openai SDK and ledger; the peer is an
httpx2.MockTransport handler that answers as the Responses API does (tests/llm/wire_episode.py) and,
for the items it is told to fail, answers their second call the way a failing server does: 200 with a
body that is not JSON, 200 empty, 503, 429, or never (a hang, cut by the item timeout).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import httpx2
import pytest

from giant.agent.modes import AgentConfig, parse_agent
from giant.config import RunOptions, shipped
from giant.eval.items import JobData
from giant.eval.runner import RunServices, run_eval
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.llm.ledger import Ledger
from giant.llm.types import CallContext, Conversation, ModelTurn, Provider
from giant.record import RESULTS_FILE, JobLayout, read_results
from giant.record.summary import Summary
from tests.eval.runner_fixtures import SLIDE_H, SLIDE_W, SLIDES, make_items
from tests.llm.wire_episode import WirePeer

OPENAI = provider_settings("openai", model="gpt-5").model_copy(update={"max_retries": 1})
AGENT = parse_agent({"mode": "giant", "max_steps": 3, "crop_size": 256, "item_timeout_s": 120.0})
# A hang is cut by the item timeout: long enough for the healthy items on a busy machine
HANG_AGENT = AGENT.model_copy(update={"item_timeout_s": 8.0})
ITEMS = make_items(4, SLIDES)
FAILING = {"demo/1", "demo/3"}  # the items whose second call meets the fault
FAULT_CAUSE = {
    "non_json": "server",
    "empty": "server",
    "503": "server",
    "429": "rate_limit",
    "hang": "timeout",
}


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-unmeasured")


class FaultPeer(WirePeer):
    """Crops at an item's first call, answers at its second; while `fault` is set, the second call of
    the FAILING items gets the fault instead. Every request is kept as (item key, what was answered,
    digest of the body): a body answered 200 twice would be a call paid twice."""

    def __init__(self, fault: str | None) -> None:
        super().__init__(lambda n: "crop", SLIDE_W, SLIDE_H)
        self.fault = fault
        self.sent: list[tuple[str, str, str]] = []

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        key = next(item.key for item in ITEMS if item.prompt in json.dumps(body))
        second = len(body["input"]) > 1
        kind = self.fault if self.fault and second and key in FAILING else "ok"
        self.sent.append((key, kind, hashlib.sha256(request.content).hexdigest()))
        if kind == "non_json":
            return httpx2.Response(200, content=b"<html>502 Bad Gateway</html>", headers=_JSON)
        if kind == "empty":
            return httpx2.Response(200, content=b"", headers=_JSON)
        if kind == "503":
            return httpx2.Response(503, json={"error": {"message": "overloaded", "type": "server_error"}})
        if kind == "429":
            error = {"message": "Rate limit reached for requests", "code": "rate_limit_exceeded"}
            return httpx2.Response(429, json={"error": error}, headers={"retry-after-ms": "1"})
        if kind == "hang":
            await asyncio.sleep(3600)
        reply = self._responses(body, "answer" if second else "crop", len(self.sent))
        return httpx2.Response(200, json=reply, headers={"x-request-id": f"req_{len(self.sent)}"})

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle))


_JSON = {"content-type": "application/json"}


async def _run(
    peer: FaultPeer,
    wsi_root: Path,
    out: Path,
    ledger: Ledger,
    *,
    resume_from: Path | None = None,
    wrap: type[Any] | None = None,
    agent: AgentConfig = AGENT,
) -> Summary:
    provider: Provider = build_provider(OPENAI, http_client=peer.client(), ledger=ledger)
    if wrap is not None:
        provider = wrap(provider)
    return (
        await run_eval(
            JobData(ITEMS, wsi_root, "da7a"),
            RunServices(provider, ledger=ledger, progress_bar=False),
            agent=agent,
            run=shipped(RunOptions, concurrency=2, breaker_after=10),
            out_dir=out,
            config_hash="c0ffee",
            resume_from=resume_from,
        )
    ).summary


@pytest.mark.parametrize(
    "fault", [pytest.param(f, marks=[pytest.mark.slow] if f == "hang" else []) for f in FAULT_CAUSE]
)
def test_a_failing_server_leaves_item_runs_unmeasured_and_the_rerun_measures_exactly_those(
    wsi_root: Path, tmp_path: Path, fault: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = Ledger(tmp_path / "ledger")
    peer = FaultPeer(fault)
    agent = HANG_AGENT if fault == "hang" else AGENT
    first = asyncio.run(_run(peer, wsi_root, tmp_path / "run1", ledger, agent=agent))
    cause = FAULT_CAUSE[fault]
    assert not first.complete and not first.setup_failure
    assert first.n_unmeasured == 2 and first.setup_causes == {cause: 2}
    assert first.incomplete_reason.startswith(f"2 of 4 item-runs unmeasured (2 {cause}); ")
    assert first.incomplete_reason.endswith("then rerun the same command to measure them")
    records = {r.key: r for r in read_results(tmp_path / "run1" / RESULTS_FILE)}
    for key in FAILING:  # the crop the server answered is paid and counted, whatever came after
        assert records[key].cause == cause and records[key].label is None
        assert records[key].calls == 2 and records[key].input_tokens > 0
        # a call the item timeout cut may have been billed: its price, and so the item's, is unknown
        assert records[key].dollars is None if fault == "hang" else (records[key].dollars or 0) > 0
    assert all(
        records[key].status == "answered" and records[key].cause is None for key in {"demo/0", "demo/2"}
    )

    capsys.readouterr()
    peer.fault, before = None, len(peer.sent)
    second = asyncio.run(
        _run(peer, wsi_root, tmp_path / "run2", ledger, resume_from=tmp_path / "run1", agent=agent)
    )
    assert capsys.readouterr().out.splitlines()[0] == f"resume: kept 2 item-runs, retrying 2 (2 {cause})"
    assert second.complete and second.n_unmeasured == 0 and second.incomplete_reason == ""
    rerun = peer.sent[before:]
    # Only the unmeasured item-runs ran, and only their second call reached the server: the first,
    # paid in the first run, was replayed from the ledger.
    assert sorted(key for key, _, _ in rerun) == sorted(FAILING)
    assert second.totals.calls_replayed == 2
    answered = [digest for _, kind, digest in peer.sent if kind == "ok"]
    assert len(answered) == len(set(answered)) == 8  # 4 item-runs x 2 calls, each paid once


CALL: ContextVar[CallContext] = ContextVar("call")


class Buggy:
    """The real provider, except that its parser raises what nothing classifies (a bug in giant or an
    SDK) on the second call of demo/1, after the server answered it and the reply was paid for."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.model = inner, inner.name, inner.model
        parse = inner._parse

        def buggy_parse(response: Any, usage: Any) -> ModelTurn:
            ctx = CALL.get()
            if ctx.item_key == "demo/1" and ctx.step > 1:
                raise KeyError("a field nothing expected")
            return parse(response, usage)

        inner._parse = buggy_parse

    async def next_turn(self, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        CALL.set(ctx)  # the parser runs in this call's task: it sees this call's context
        return await self.inner.next_turn(conversation, ctx)


def test_an_unclassified_exception_is_unmeasured_keeps_its_paid_calls_and_its_traceback(
    wsi_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = Ledger(tmp_path / "ledger")
    peer = FaultPeer(None)
    first = asyncio.run(_run(peer, wsi_root, tmp_path / "run1", ledger, wrap=Buggy))
    assert not first.complete and first.n_unmeasured == 1 and first.setup_causes == {"bug": 1}
    assert "1 bug" in first.incomplete_reason and "errors.log" in first.incomplete_reason
    record = next(r for r in read_results(tmp_path / "run1" / RESULTS_FILE) if r.key == "demo/1")
    assert (record.status, record.cause, record.label) == ("runner_error", "bug", None)
    # both calls were answered and paid for, the second before its parser failed: both are counted
    healthy = next(r for r in read_results(tmp_path / "run1" / RESULTS_FILE) if r.key == "demo/0")
    assert record.calls == 2 and record.dollars == pytest.approx(healthy.dollars) and healthy.dollars
    assert record.input_tokens == healthy.input_tokens
    assert record.trajectory and (tmp_path / "run1" / record.trajectory / "trajectory.json").is_file()
    log = JobLayout(tmp_path / "run1").errors.read_text()
    assert "demo/1 run 0: KeyError" in log and "Traceback (most recent call last)" in log

    capsys.readouterr()
    before = len(peer.sent)
    second = asyncio.run(_run(peer, wsi_root, tmp_path / "run2", ledger, resume_from=tmp_path / "run1"))
    assert capsys.readouterr().out.splitlines()[0] == "resume: kept 3 item-runs, retrying 1 (1 bug)"
    # Both calls of demo/1 were answered (and paid) before the bug: the rerun replays them from the
    # ledger and sends nothing.
    assert second.complete and peer.sent[before:] == [] and second.totals.calls_replayed == 2
