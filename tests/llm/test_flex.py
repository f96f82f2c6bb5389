"""OpenAI flex processing through the real openai SDK against httpx2.MockTransport: what is sent,
what a "resource unavailable" 429 costs in requests and retries, which tier is billed and recorded,
the one line for a model flex does not serve, and the ledger's replay across tiers."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import httpx2
import pytest

from giant.eval.causes import FATAL_CAUSES
from giant.llm.config import FLEX_TIMEOUT_S, STANDARD_TIMEOUT_S, provider_settings
from giant.llm.factory import build_provider
from giant.llm.ledger import Ledger
from giant.llm.pricing import Pricing
from giant.llm.types import FatalProviderError, ModelTurn, Usage
from tests.llm.conftest import make_conversation, make_ctx
from tests.llm.mock_api import MockAPI, call, message, responses_body, step_json

CROP = {"type": "crop", "x": 0, "y": 0, "width": 10, "height": 10}
# OpenAI's flex guide: "a 429 Resource Unavailable error code. You will not be charged when this occurs."
BUSY = (
    429,
    {"error": {"message": "Resource Unavailable", "type": "resource_unavailable"}},
    {"retry-after-ms": "1"},
)
# The server's answer for a model flex does not serve (openai/codex#15099).
UNSUPPORTED = (
    400,
    {"error": {"type": "invalid_request_error", "message": "Unsupported service_tier: flex"}},
    {},
)
PRICES = Pricing.load("conf/pricing.yaml")


def flex(**overrides: Any) -> Any:
    return provider_settings("openai", **{"model": "gpt-5", "service_tier": "flex", **overrides})


def reply(tier: str = "flex") -> dict[str, Any]:
    return responses_body(message(step_json(CROP)), service_tier=tier)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-flex")


def test_flex_requests_carry_the_tier_and_a_longer_timeout_standard_ones_neither() -> None:
    api = MockAPI(reply(), reply("default"))
    turn = call(api, flex())
    assert api.requests[0]["service_tier"] == "flex"
    assert turn.usage.tier == "flex" and turn.usage.calls_flex == 1
    standard = call(api, provider_settings("openai", model="gpt-5"))
    assert "service_tier" not in api.requests[1]
    assert standard.usage.tier == "standard" and standard.usage.calls_flex == 0
    assert flex().client_timeout_s() == FLEX_TIMEOUT_S
    assert provider_settings("openai").client_timeout_s() == STANDARD_TIMEOUT_S
    assert flex(timeout_s=120).client_timeout_s() == 120  # a value the user set wins


def test_resource_unavailable_is_retried_apart_from_the_ordinary_retries() -> None:
    api = MockAPI(BUSY, BUSY, BUSY, reply())
    turn = call(api, flex(max_retries=0, flex_retries=3))  # max_retries=0: no ordinary retry at all
    assert len(api.requests) == 4 and all(r["service_tier"] == "flex" for r in api.requests)
    assert turn.usage.tier == "flex"
    assert turn.usage.cost_usd == pytest.approx(PRICES.cost("gpt-5", turn.usage, "flex"))
    assert turn.usage.cost_usd == pytest.approx(PRICES.cost("gpt-5", turn.usage) / 2)


def test_fallback_standard_sends_that_call_without_the_tier_and_bills_it_standard() -> None:
    api = MockAPI(BUSY, BUSY, reply("default"))
    turn = call(api, flex(flex_retries=1, flex_fallback="standard"))
    assert [r.get("service_tier") for r in api.requests] == ["flex", "flex", None]
    assert turn.usage.tier == "standard" and turn.usage.calls_flex == 0
    assert turn.usage.cost_usd == pytest.approx(PRICES.cost("gpt-5", turn.usage))


def test_fallback_wait_keeps_asking_flex() -> None:
    api = MockAPI(BUSY, BUSY, BUSY, reply())
    turn = call(api, flex(flex_retries=0, flex_fallback="wait"))
    assert [r.get("service_tier") for r in api.requests] == ["flex"] * 4
    assert turn.usage.tier == "flex"


def test_a_reply_without_the_tier_is_billed_at_the_tier_asked_for() -> None:
    body = reply()
    del body["service_tier"]
    assert call(MockAPI(body), flex()).usage.tier == "flex"


def test_a_model_flex_does_not_serve_stops_with_one_line_naming_setting_and_model() -> None:
    api = MockAPI(UNSUPPORTED, reply())
    with pytest.raises(FatalProviderError) as err:
        call(api, flex(model="gpt-4o"))
    assert err.value.cause == "flex_unsupported" and "flex_unsupported" in FATAL_CAUSES
    assert "provider.service_tier=flex" in str(err.value) and "gpt-4o" in str(err.value)
    assert "\n" not in str(err.value)
    assert len(api.requests) == 1  # never asked again


def test_every_call_is_answered_under_30_percent_resource_unavailable() -> None:
    """Eight items' episodes, three calls each, all in flight at once, against a server that refuses
    30% of flex requests: every call is answered, at the flex tier, with the default settings."""
    rng = random.Random(7)
    answered = 0

    def handler(request: httpx2.Request) -> httpx2.Response:
        nonlocal answered
        if rng.random() < 0.3:
            return httpx2.Response(BUSY[0], json=BUSY[1], headers=BUSY[2])
        answered += 1
        return httpx2.Response(200, json=reply())

    async def episode(provider: Any, item: int) -> list[ModelTurn]:
        return [
            await provider.next_turn(make_conversation(), make_ctx(item_key=f"tcga/{item}", step=step))
            for step in (1, 2, 3)
        ]

    async def campaign() -> list[list[ModelTurn]]:
        client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
        provider = build_provider(flex(flex_fallback="wait"), http_client=client)
        return await asyncio.gather(*(episode(provider, item) for item in range(8)))

    turns = [turn for episode_turns in asyncio.run(campaign()) for turn in episode_turns]
    assert len(turns) == 24 == answered
    assert all(turn.usage.tier == "flex" for turn in turns)


def test_a_pilot_paid_at_standard_replays_free_under_flex_and_back(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger")

    def turn(api: MockAPI, cfg: Any) -> ModelTurn:
        async def go() -> ModelTurn:
            provider = build_provider(cfg, http_client=api.client(), ledger=ledger)
            return await provider.next_turn(make_conversation(), make_ctx())

        return asyncio.run(go())

    pilot = turn(MockAPI(reply("default")), provider_settings("openai", model="gpt-5"))
    assert pilot.usage.cost_usd and pilot.usage.tier == "standard"
    silent = MockAPI()  # any request would fail: nothing is queued
    full = turn(silent, flex())
    assert silent.requests == [] and full.usage.cost_usd == 0.0 and full.usage.calls_replayed == 1
    assert full.usage.replayed_cost_usd == pytest.approx(pilot.usage.cost_usd)
    assert full.usage.calls_flex == 0  # nothing paid now


def test_costs_per_tier() -> None:
    usage = Usage(
        input_tokens=2_000_000, cached_input_tokens=1_000_000, cache_write_tokens=0, output_tokens=100_000
    )
    standard = 1.0 * 1.25 + 1.0 * 0.125 + 0.1 * 10.0
    assert PRICES.cost("gpt-5", usage) == pytest.approx(standard)
    assert PRICES.cost("gpt-5", usage, "flex") == pytest.approx(standard / 2)
    assert PRICES.cost("gpt-5", usage, "batch") == pytest.approx(standard / 2)
    assert PRICES.cost("gpt-4o", usage, "flex") is None  # not sold at flex: unknown, never a guess
    written = Usage(input_tokens=2_000_000, cached_input_tokens=1_000_000, cache_write_tokens=500_000)
    claude = 0.5 * 5.0 + 1.0 * 0.5 + 0.5 * 6.25
    assert PRICES.cost("claude-opus-4-5", written) == pytest.approx(claude)
    assert PRICES.cost("claude-opus-4-5", written, "batch") == pytest.approx(claude / 2)  # cache too
    assert PRICES.cost("claude-opus-4-5", written, "flex") is None  # Anthropic has no flex
    assert PRICES.tiers("gpt-5") == ["standard", "flex", "batch"]
    assert PRICES.tiers("claude-opus-4-5") == ["standard", "batch"]
