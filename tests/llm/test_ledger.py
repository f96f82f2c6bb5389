"""The ledger itself (issue 12): replies kept by key, replayed at no cost, images stored once, and
files that stay whole when several processes write the same key at once."""

from __future__ import annotations

import asyncio
import multiprocessing
from pathlib import Path

import pytest

from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.llm.ledger import Ledger, LedgerEntry, main, stats
from giant.llm.types import ModelTurn, ParseError
from tests.llm.conftest import make_conversation, make_ctx
from tests.llm.mock_api import MockAPI, message, responses_body, step_json

CFG = provider_settings("openai", model="gpt-5")
ANSWER = step_json({"type": "answer", "text": '<response>{"answer": 2}</response>'})


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def turns(api: MockAPI, ledger: Ledger, *run_indexes: int) -> list[ModelTurn | ParseError]:
    async def go() -> list[ModelTurn | ParseError]:
        provider = build_provider(CFG, http_client=api.client(), ledger=ledger)
        out: list[ModelTurn | ParseError] = []
        for k in run_indexes:
            try:
                out.append(await provider.next_turn(make_conversation(2), make_ctx(run_index=k)))
            except ParseError as exc:
                out.append(exc)
        return out

    return asyncio.run(go())


def test_a_kept_reply_is_replayed_free_and_each_run_index_is_its_own_sample(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    api = MockAPI(*[responses_body(message(ANSWER))] * 2)
    paid, replayed, other_run = turns(api, ledger, 0, 0, 1)
    assert len(api.requests) == 2  # run 0 once, run 1 once: the same request of another run is paid
    assert (
        isinstance(paid, ModelTurn) and isinstance(replayed, ModelTurn) and isinstance(other_run, ModelTurn)
    )
    assert paid.usage.cost_usd and not paid.usage.replayed
    assert replayed.usage.replayed and replayed.usage.cost_usd == 0.0
    assert replayed.usage.replayed_cost_usd == paid.usage.cost_usd
    assert replayed.steps == paid.steps and replayed.usage.input_tokens == paid.usage.input_tokens
    summary = stats(tmp_path)
    assert (summary.calls, summary.images) == (2, 2)  # two calls; their two images stored once
    assert summary.dollars == pytest.approx(2 * paid.usage.cost_usd)


def test_a_paid_reply_that_fails_to_parse_fails_again_unpaid(tmp_path: Path) -> None:
    api = MockAPI(responses_body(message("not a step at all")))
    first, again = turns(api, Ledger(tmp_path), 0, 0)
    assert len(api.requests) == 1
    assert isinstance(first, ParseError) and isinstance(again, ParseError)
    assert str(first) == str(again)
    assert first.usage is not None and again.usage is not None
    assert again.usage.replayed and again.usage.cost_usd == 0.0
    assert again.usage.replayed_cost_usd == first.usage.cost_usd


def test_the_summary_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    turns(MockAPI(responses_body(message(ANSWER))), Ledger(tmp_path), 0)
    assert main([str(tmp_path)]) == 0
    assert "1 calls" in capsys.readouterr().out
    # before the first paid call there is no ledger yet: zero calls, not a usage line
    assert main([str(tmp_path / "missing")]) == 0
    assert "0 calls: no ledger at" in capsys.readouterr().out
    assert main([]) == 2


def _write_many(root: str, entry_json: str, times: int) -> None:
    entry = LedgerEntry.model_validate_json(entry_json)
    for _ in range(times):
        Ledger(Path(root)).put(entry, make_conversation(1))


def test_two_processes_writing_one_key_leave_a_whole_file(tmp_path: Path) -> None:
    api = MockAPI(responses_body(message(ANSWER)))
    turns(api, Ledger(tmp_path / "seed"), 0)
    (path,) = (tmp_path / "seed" / "calls").glob("*/*.json")
    entry_json = path.read_text()
    ctx = multiprocessing.get_context("fork")
    writers = [
        ctx.Process(target=_write_many, args=(str(tmp_path / "shared"), entry_json, 200)) for _ in range(2)
    ]
    for process in writers:
        process.start()
    for process in writers:
        process.join(60)
    assert [p.exitcode for p in writers] == [0, 0]
    files = sorted((tmp_path / "shared").rglob("*"))
    written = [f for f in files if f.is_file()]
    print(f"2 processes x 200 writes of one key: {len(written)} files left")
    assert len(written) == 2  # the call and its image, no temporary file left behind
    kept = Ledger(tmp_path / "shared").get(LedgerEntry.model_validate_json(entry_json).key)
    assert kept is not None and kept.model_dump_json() == entry_json
