"""provider=gemini through the real google-genai SDK against the loopback Gemini server: the request,
thought signatures sent back unchanged, usage and price, the ledger's replay, errors to causes, flex."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest

import giant.config  # noqa: F401  (offers the `tools: all` option parse_agent composes)
from giant.agent.episode import run_episode
from giant.agent.modes import parse_agent
from giant.core import Item
from giant.errors import ConfigError
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider, check_credentials
from giant.llm.ledger import Ledger
from giant.llm.pricing import Pricing
from giant.llm.schema import offered_actions, step_schema
from giant.llm.types import (
    AssistantMessage,
    Conversation,
    FatalProviderError,
    ModelTurn,
    ProviderError,
    TransientError,
    UserMessage,
)
from giant.record.trajectory import Trajectory
from giant.wsi.synthetic import write_synthetic_slide
from tests.llm.conftest import make_conversation, make_ctx
from tests.llm.gemini_server import (
    BAD_KEY,
    FLEX_UNSERVED,
    KEY,
    OVERLOADED,
    PERMISSION_DENIED,
    RATE_LIMIT,
    SPENT_QUOTA,
    UNKNOWN_MODEL,
    GeminiServer,
    serving,
)

WIDTH, HEIGHT = 6000, 4000
ITEM = Item(
    benchmark="tcga_slidebench",
    benchmark_id="15",
    image_path="slide.svs",
    prompt='Which tissue is this?\n1. a\n2. b\n3. c\n4. d\nAnswer as {"answer": N}.',
    options=("a", "b", "c", "d"),
    truth=2,
    metric="accuracy",
)
FAST = {"max_retries": 2}


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)


@pytest.fixture(scope="module")
def slide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_synthetic_slide(tmp_path_factory.mktemp("slide") / "slide.svs", WIDTH, HEIGHT, seed=15)


def call(url: str, conversation: Conversation | None = None, **settings: Any) -> ModelTurn:
    async def go() -> ModelTurn:
        provider = build_provider(provider_settings("gemini", base_url=url, **settings))
        return await provider.next_turn(conversation or make_conversation(), make_ctx())

    return asyncio.run(go())


def episode(url: str, slide: Path, ledger: Ledger | None = None, **settings: Any) -> Trajectory:
    agent = parse_agent({"mode": "paper", "max_steps": 5, "crop_size": 500})

    async def go() -> Trajectory:
        provider = build_provider(provider_settings("gemini", base_url=url, **settings), ledger=ledger)
        return await run_episode(ITEM, slide, provider, agent, out_dir=None, seed=0)

    return asyncio.run(go())


def test_google_api_key_is_read_when_gemini_api_key_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    """google-genai accepts GOOGLE_API_KEY; so does giant, after GEMINI_API_KEY (issue 42)."""
    monkeypatch.delenv("GEMINI_API_KEY")
    settings = provider_settings("gemini")
    with pytest.raises(ConfigError, match="GEMINI_API_KEY or GOOGLE_API_KEY is unset"):
        check_credentials(settings)
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    check_credentials(settings)
    server = GeminiServer(answer_at=1)
    with serving(server) as url:
        call(url)
    assert server.keys == [KEY]
    monkeypatch.setenv("GEMINI_API_KEY", "the-first-variable-wins")
    assert settings.api_key() == "the-first-variable-wins"


def test_structured_request_through_the_sdk() -> None:
    server = GeminiServer(answer_at=1)
    with serving(server) as url:
        turn = call(url)
    body = server.requests[0]
    assert server.keys == [KEY]  # the key from GEMINI_API_KEY, in its header only
    assert KEY not in json.dumps(body)
    user = body["contents"][0]
    assert user["role"] == "user" and user["parts"][0] == {"text": "Which cancer type is this?"}
    image = user["parts"][1]
    sent = base64.urlsafe_b64decode(image["inlineData"]["data"])
    assert sent == base64.b64decode(make_conversation().messages[0].parts[1].image.data_b64)  # type: ignore[union-attr]
    assert image["inlineData"]["mime_type"] == "image/jpeg"
    assert image["mediaResolution"] == {"level": "MEDIA_RESOLUTION_HIGH"}
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == step_schema(offered_actions(make_ctx()))
    assert config["thinkingConfig"] == {"thinking_level": "HIGH"}
    assert body["systemInstruction"]["parts"] == [{"text": "You are a pathologist."}]
    assert "serviceTier" not in body
    assert turn.steps[0].action.type == "answer"
    assert [r.provider for r in turn.reasoning] == ["gemini"] and turn.reasoning[0].signature


def test_usage_counts_cached_and_thought_tokens_and_prices_them() -> None:
    server = GeminiServer(answer_at=1)
    with serving(server) as url:
        turn = call(url)
    usage = turn.usage
    assert usage.output_tokens == 60 + 40 and usage.reasoning_tokens == 40  # thoughts billed as output
    prompt = server.requests and usage.input_tokens
    assert prompt > 0 and usage.request_id == "resp-1"
    rates = Pricing.load("conf/pricing.yaml").rates("gemini-3-flash-preview")
    assert rates is not None
    expected = (
        usage.input_tokens - usage.cached_input_tokens
    ) * rates.input + usage.output_tokens * rates.output
    assert usage.cost_usd == pytest.approx(expected / 1e6)


def test_thinking_budget_for_gemini_2_5() -> None:
    server = GeminiServer(answer_at=1)
    with serving(server) as url:
        call(url, model="gemini-2.5-flash", thinking_level=None, thinking_budget=512, media_resolution=None)
    config = server.requests[0]["generationConfig"]
    assert config["thinkingConfig"] == {"thinking_budget": 512}
    assert "mediaResolution" not in json.dumps(server.requests[0])


@pytest.mark.parametrize("protocol", ["structured", "tools"])
def test_an_episode_sends_every_signature_back(protocol: str, slide: Path) -> None:
    server = GeminiServer(answer_at=5)
    with serving(server) as url:
        traj = episode(url, slide, protocol=protocol)
    assert traj.status == "answered", traj.reason
    assert server.rejected == [] and len(server.requests) == 5
    for n, body in enumerate(server.requests):
        model_parts = [p for c in body["contents"] if c["role"] == "model" for p in c["parts"]]
        assert len(model_parts) == n and all(p.get("thoughtSignature") for p in model_parts)
    if protocol == "tools":
        last = server.requests[-1]
        declared = last["tools"][0]["functionDeclarations"]
        assert [d["name"] for d in declared] == ["slide_zoom"]
        answers = [p for c in last["contents"] for p in c["parts"] if "functionResponse" in p]
        assert len(answers) == 4 and all(a["functionResponse"]["name"] == "slide_zoom" for a in answers)
        assert [a["functionResponse"]["id"] for a in answers] == [f"call-{n}" for n in range(1, 5)]
    # the prefix stays byte-identical, so the implicit cache reads the earlier turns
    assert all(call.usage.cached_input_tokens > 0 for call in traj.calls[1:])


def test_a_request_that_drops_a_signature_is_refused(slide: Path) -> None:
    server = GeminiServer(answer_at=9)
    with serving(server) as url:
        first = call(url)
        history = [
            *make_conversation().messages,
            AssistantMessage(steps=first.steps, raw_text=first.raw_text),  # its signature dropped
            UserMessage(parts=[]),
        ]
        with pytest.raises(FatalProviderError) as dropped:
            call(url, Conversation(system="You are a pathologist.", messages=history), max_retries=0)
        answered = AssistantMessage(steps=first.steps, raw_text=first.raw_text, reasoning=first.reasoning)
        kept = [*history[:1], answered, UserMessage(parts=[])]
        call(url, Conversation(system="You are a pathologist.", messages=kept))
    assert dropped.value.cause == "bad_request" and "thought_signature" in str(dropped.value)
    assert len(server.rejected) == 1 and len(server.requests) == 3


def test_a_replayed_episode_sends_nothing(slide: Path, tmp_path: Path) -> None:
    server = GeminiServer(answer_at=5)
    with serving(server) as url:
        first = episode(url, slide, Ledger(tmp_path / "ledger"))
        sent = len(server.requests)
        again = episode(url, slide, Ledger(tmp_path / "ledger"))
    assert sent == 5 and len(server.requests) == sent and server.rejected == []
    assert again.status == first.status == "answered"
    assert again.totals.calls_replayed == 5 and again.totals.cost_usd == 0
    assert again.totals.replayed_cost_usd == pytest.approx(first.totals.cost_usd)


def test_the_audit_record_keeps_a_signature_length_only(tmp_path: Path) -> None:
    server = GeminiServer(answer_at=9)
    record = tmp_path / "calls.jsonl"

    async def go() -> None:
        provider = build_provider(provider_settings("gemini", base_url=url))
        conversation = make_conversation()
        turn = await provider.next_turn(conversation, make_ctx(record_path=str(record)))
        conversation.messages += [
            AssistantMessage(steps=turn.steps, raw_text=turn.raw_text, reasoning=turn.reasoning),
            UserMessage(parts=[]),
        ]
        await provider.next_turn(conversation, make_ctx(record_path=str(record), step=2))

    with serving(server) as url:
        asyncio.run(go())
    text = record.read_text()
    issued = [sig for sigs in server.signed.values() for sig in sigs]
    assert "<thought_signature" in text and not any(sig in text for sig in issued)


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("reply", "cause", "sent"),
    [
        (BAD_KEY, "key", 1),
        (PERMISSION_DENIED, "key", 1),
        (UNKNOWN_MODEL, "model_name", 1),
        (SPENT_QUOTA, "quota", 1),
    ],
)
def test_setup_errors_are_fatal_and_not_retried(reply: Any, cause: str, sent: int) -> None:
    server = GeminiServer(answer_at=1)
    server.fail = [reply] * 3
    with serving(server) as url, pytest.raises(FatalProviderError) as failed:
        call(url, **FAST)
    assert failed.value.cause == cause and len(server.requests) == sent
    assert KEY not in str(failed.value)


@pytest.mark.parametrize(("reply", "cause"), [(RATE_LIMIT, "rate_limit"), (OVERLOADED, "server")])
def test_rate_limits_and_overload_are_retried_by_the_one_layer(
    reply: Any, cause: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("giant.llm.runtime.RATE_LIMIT_RETRIES", 2)  # a rate limit: the pacer's retries
    server = GeminiServer(answer_at=1)
    server.fail = [reply] * 2
    with serving(server) as url:
        turn = call(url, **FAST)  # two failures, then the third attempt answers
    assert len(server.requests) == 3 and turn.steps[0].action.type == "answer"
    server.fail = [reply] * 3
    with serving(server) as url, pytest.raises(TransientError) as failed:
        call(url, **FAST)
    assert failed.value.cause == cause and len(server.requests) == 3 + 3  # 1 + max_retries


@pytest.mark.parametrize("blocked", ["finish", "block"])
def test_a_safety_block_fails_the_item_with_its_reason(blocked: str, slide: Path) -> None:
    server = GeminiServer(answer_at=5)
    setattr(server, blocked, "SAFETY")
    with serving(server) as url:
        traj = episode(url, slide)
    assert traj.status == "provider_error" and "SAFETY" in traj.reason
    assert len(server.requests) == 1  # not asked again


def test_a_connection_refused_is_a_network_error(unused_port: str = "http://127.0.0.1:9") -> None:
    with pytest.raises(ProviderError) as failed:
        call(unused_port, max_retries=0)
    assert failed.value.cause == "network"


# ----------------------------------------------------------------------------- flex


def test_flex_is_sent_and_billed_at_half() -> None:
    server = GeminiServer(answer_at=1)
    with serving(server) as url:
        flex = call(url, service_tier="flex")
        standard = call(url)
    assert server.requests[0]["serviceTier"] == "flex" and "serviceTier" not in server.requests[1]
    assert flex.usage.tier == "flex" and flex.usage.calls_flex == 1
    assert standard.usage.tier == "standard"
    rates = Pricing.load("conf/pricing.yaml").rates("gemini-3-flash-preview")
    assert rates is not None and rates.flex is not None
    assert flex.usage.cost_usd == pytest.approx(
        Pricing.load("conf/pricing.yaml").cost("gemini-3-flash-preview", flex.usage, "flex")
    )
    assert rates.flex.input == rates.input / 2 and rates.flex.output == rates.output / 2


def test_shed_flex_backs_off_then_falls_back_to_standard() -> None:
    server = GeminiServer(answer_at=1)
    server.fail = [OVERLOADED, OVERLOADED]
    with serving(server) as url:
        turn = call(url, service_tier="flex", flex_retries=1, max_retries=0)
    tiers = [body.get("serviceTier") for body in server.requests]
    assert tiers == ["flex", "flex", None]  # shed, asked again once, then sent at the standard tier
    assert turn.usage.tier == "standard" and turn.usage.calls_flex == 0


def test_flex_and_a_replay_share_the_ledger_key(slide: Path, tmp_path: Path) -> None:
    server = GeminiServer(answer_at=5)
    with serving(server) as url:
        episode(url, slide, Ledger(tmp_path / "ledger"))
        again = episode(url, slide, Ledger(tmp_path / "ledger"), service_tier="flex")
    assert len(server.requests) == 5 and again.totals.calls_replayed == 5


def test_a_model_flex_does_not_serve_is_one_line_naming_the_setting() -> None:
    server = GeminiServer(answer_at=1)
    server.fail = [FLEX_UNSERVED]
    with serving(server) as url, pytest.raises(FatalProviderError) as failed:
        call(url, service_tier="flex")
    assert failed.value.cause == "flex_unsupported" and len(server.requests) == 1
    assert str(failed.value).startswith(
        "provider.service_tier=flex is not available for model gemini-3-flash"
    )
