"""provider.prompt_cache_retention: OpenAI's extended (24h) prompt cache in batch mode, on the wire
of synchronous calls and of batch bodies through the real openai SDK, and out of the ledger key."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from giant.llm.batch import batch_collector
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.llm.ledger import Ledger, call_key
from giant.llm.providers.openai.provider import OpenAIProvider
from giant.llm.types import ModelTurn
from tests.eval.runner_fixtures import SLIDES, write_slides
from tests.llm.batch_job import campaign
from tests.llm.batch_stub import BatchStub, serving
from tests.llm.conftest import make_conversation, make_ctx
from tests.llm.mock_api import MockAPI, call, message, responses_body, step_json

CROP = {"type": "crop", "x": 0, "y": 0, "width": 10, "height": 10}
FIELD = "prompt_cache_retention"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-retention-0123456789")


def reply() -> dict[str, Any]:
    return responses_body(message(step_json(CROP)), service_tier="default")


def sent(**settings: Any) -> dict[str, Any]:
    """The request body the SDK put on the wire for one synchronous call."""
    api = MockAPI(reply())
    call(api, provider_settings("openai", **{"model": "gpt-5", **settings}))
    return api.requests[0]


def built(tmp_path: Path, **settings: Any) -> dict[str, Any]:
    cfg = provider_settings("openai", **{"model": "gpt-5", **settings})
    ledger = Ledger(tmp_path / "ledger")
    provider = build_provider(cfg, ledger=ledger, batches=batch_collector(cfg, ledger))
    assert isinstance(provider, OpenAIProvider)
    return provider.build_request(make_conversation(2), make_ctx())


def test_the_default_sends_nothing_on_synchronous_calls() -> None:
    assert provider_settings("openai").prompt_cache_retention == "auto"  # conf/provider/openai.yaml
    assert FIELD not in sent()
    assert FIELD not in sent(prompt_cache_retention=None)


@pytest.mark.parametrize("value", ["24h", "in_memory"])
def test_a_value_set_is_on_the_wire_as_given(value: str) -> None:
    assert sent(prompt_cache_retention=value)[FIELD] == value


def test_auto_asks_for_24h_in_batch_mode_for_the_models_that_take_it(tmp_path: Path) -> None:
    assert built(tmp_path, batch=True)[FIELD] == "24h"
    assert built(tmp_path, batch=True, model="gpt-5-2025-08-07")[FIELD] == "24h"  # a dated snapshot
    assert built(tmp_path, batch=True, model="gpt-5.1")[FIELD] == "24h"
    for model in ("gpt-5-mini", "gpt-4o", "o3"):  # not on OpenAI's list: they would answer 400
        assert FIELD not in built(tmp_path, batch=True, model=model), model
    assert FIELD not in built(tmp_path, batch=True, prompt_cache_retention=None)
    assert built(tmp_path, batch=True, prompt_cache_retention="in_memory")[FIELD] == "in_memory"


def test_batch_bodies_carry_24h_through_the_batch_api(tmp_path: Path) -> None:
    """The JSONL the SDK uploads holds the same request bodies: every one asks for 24h retention."""
    stub = BatchStub(answer_at=2)
    wsi = write_slides(tmp_path / "wsi", SLIDES)
    with serving(stub) as url:
        summary = asyncio.run(campaign("openai", url, wsi, tmp_path, 2))
    assert summary.n_scored == 2
    bodies = [r["body"] for b in stub.batches for r in b["requests"]]
    assert bodies and all(body[FIELD] == "24h" for body in bodies)
    with serving(none := BatchStub(answer_at=2)) as url:
        asyncio.run(campaign("openai", url, wsi, tmp_path / "off", 2, prompt_cache_retention=None))
    assert all(FIELD not in r["body"] for b in none.batches for r in b["requests"])


def test_the_retention_is_not_in_the_ledger_key(tmp_path: Path) -> None:
    """A pilot paid synchronously (nothing sent) replays free in a batch campaign asking for 24h."""
    sync = provider_settings("openai", model="gpt-5")
    batch = provider_settings("openai", model="gpt-5", batch=True, prompt_cache_retention="24h")
    plain, long = built(tmp_path), built(tmp_path, batch=True, prompt_cache_retention="24h")
    assert FIELD not in plain and long[FIELD] == "24h"

    def key(settings: Any, request: dict[str, Any]) -> str:
        dumped = settings.model_dump(mode="json")
        return call_key(provider="openai", model="gpt-5", settings=dumped, request=request, run_index=0)

    assert key(sync, plain) == key(batch, long)
    # The wire field alone is left out too, whatever the settings say; the request still counts.
    assert key(sync, plain) == key(sync, {**plain, FIELD: "24h"}) != key(sync, {**plain, "store": True})


def test_a_pilot_paid_without_retention_replays_free_with_24h(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger")

    def turn(api: MockAPI, **settings: Any) -> ModelTurn:
        async def go() -> ModelTurn:
            cfg = provider_settings("openai", model="gpt-5", **settings)
            provider = build_provider(cfg, http_client=api.client(), ledger=ledger)
            return await provider.next_turn(make_conversation(), make_ctx())

        return asyncio.run(go())

    pilot = turn(MockAPI(reply()), prompt_cache_retention=None)
    assert pilot.usage.cost_usd
    silent = MockAPI()  # any request would fail: nothing is queued
    again = turn(silent, prompt_cache_retention="24h")
    assert silent.requests == [] and again.usage.calls_replayed == 1 and again.usage.cost_usd == 0.0
