"""provider.cache_ttl: Anthropic's 1-hour cache entries in batch mode, on the wire, in the usage, in
the price and out of the ledger key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from giant.llm.batch import batch_collector
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.llm.ledger import Ledger, call_key
from giant.llm.pricing import Pricing
from giant.llm.providers.anthropic.provider import AnthropicProvider
from giant.llm.types import Usage
from tests.llm.conftest import make_conversation, make_ctx
from tests.llm.mock_api import MockAPI, call, messages_body, step_json, tool_use

PRICES = Pricing.load("conf/pricing.yaml")
CROP = {"type": "crop", "x": 0, "y": 0, "width": 10, "height": 10}


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-ttl")


def markers(request: dict[str, Any]) -> list[dict[str, Any]]:
    """Every cache_control in the request, in order."""
    found: list[dict[str, Any]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if "cache_control" in value:
                found.append(value["cache_control"])
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(request)
    return found


def request_of(tmp_path: Path, **settings: Any) -> dict[str, Any]:
    cfg = provider_settings("anthropic", model="claude-sonnet-4-5", **settings)
    ledger = Ledger(tmp_path / "ledger")
    provider = build_provider(cfg, ledger=ledger, batches=batch_collector(cfg, ledger))
    assert isinstance(provider, AnthropicProvider)
    return provider.build_request(make_conversation(2), make_ctx())


def test_the_1h_ttl_goes_on_every_breakpoint_in_batch_mode_only(tmp_path: Path) -> None:
    batch_1h = markers(request_of(tmp_path, batch=True, cache_ttl="1h"))
    assert batch_1h and all(m == {"type": "ephemeral", "ttl": "1h"} for m in batch_1h)
    # Synchronous calls are seconds apart: 5-minute entries whatever the setting; and 5m in batch.
    for settings in ({"batch": False, "cache_ttl": "1h"}, {"batch": True, "cache_ttl": "5m"}):
        sent = markers(request_of(tmp_path, **settings))
        assert sent and all(m == {"type": "ephemeral"} for m in sent), settings


def test_1h_writes_are_read_from_the_usage_and_billed_at_2x_input() -> None:
    usage = {
        "input_tokens": 100,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 3000,
        "cache_creation": {"ephemeral_1h_input_tokens": 2000, "ephemeral_5m_input_tokens": 1000},
        "output_tokens": 10,
    }
    reply = messages_body(tool_use("submit_step", json.loads(step_json(CROP)), "toolu_1"), usage=usage)
    turn = call(
        MockAPI(reply), provider_settings("anthropic", model="claude-sonnet-4-5", thinking_budget=None)
    )
    assert turn.usage.cache_write_tokens == 3000 and turn.usage.cache_write_1h_tokens == 2000
    expected = (100 * 3.00 + 1000 * 3.75 + 2000 * 6.00 + 10 * 15.00) / 1e6
    assert turn.usage.cost_usd == pytest.approx(expected)
    half = Usage(input_tokens=2000, cache_write_tokens=2000, cache_write_1h_tokens=2000)
    assert PRICES.cost("claude-sonnet-4-5", half, "batch") == pytest.approx(2000 * 3.00 / 1e6)  # 2x 1.50


def test_1h_writes_of_a_model_without_the_rate_cost_unknown() -> None:
    usage = Usage(input_tokens=2000, cache_write_tokens=2000, cache_write_1h_tokens=2000)
    assert PRICES.cost("gpt-5", usage) is None
    assert PRICES.cost("gpt-5", Usage(input_tokens=2000, cache_write_tokens=2000)) is not None


def test_the_ttl_is_not_in_the_ledger_key(tmp_path: Path) -> None:
    """A pilot paid at standard (5-minute entries) replays free in a 1-hour batch campaign."""
    sync = provider_settings("anthropic", model="claude-sonnet-4-5").model_dump(mode="json")
    batch = provider_settings("anthropic", model="claude-sonnet-4-5", batch=True, cache_ttl="1h")
    plain, long = request_of(tmp_path), request_of(tmp_path, batch=True, cache_ttl="1h")
    assert plain != long
    keys = {
        call_key(provider="anthropic", model="claude-sonnet-4-5", settings=s, request=r, run_index=0)
        for s, r in ((sync, plain), (batch.model_dump(mode="json"), long))
    }
    assert len(keys) == 1
