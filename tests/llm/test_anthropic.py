"""The anthropic provider through the real SDK and httpx2.MockTransport."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest

from giant.errors import ConfigError
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.llm.schema import step_schema
from giant.llm.types import (
    AnswerAction,
    AssistantMessage,
    Conversation,
    CropAction,
    NoteAction,
    ParseError,
    Reasoning,
    RefusalError,
    Step,
    TextPart,
    TransientError,
    UserMessage,
)
from tests.llm.conftest import agent_context, make_conversation, make_ctx, make_image
from tests.llm.mock_api import MockAPI, call, messages_body, messy_replies, text_block, tool_use

KEY = "sk-ant-test-SECRET-0123456789"
CFG = provider_settings("anthropic", model="claude-opus-4-5")
NO_THINKING = CFG.model_copy(update={"thinking_budget": None})
TOOLS_CFG = CFG.model_copy(update={"protocol": "tools"})
CROP = {"type": "crop", "x": 1, "y": 2, "width": 3, "height": 4}
CROP_INPUT = {"reasoning": "look", "action": CROP}


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def history(n_crops: int = 2) -> Conversation:
    """The overview, then n crops answered by tool results carrying their image."""
    conversation = make_conversation()
    for i in range(n_crops):
        step = Step(reasoning="look", action=CropAction(x=i, y=i, width=9, height=9), call_id=f"toolu_{i}")
        conversation.messages += [
            AssistantMessage(steps=[step]),
            UserMessage(
                parts=[TextPart(text=f"crop {i}"), make_conversation().messages[0].parts[1]],  # type: ignore[union-attr]
                in_reply_to=f"toolu_{i}",
            ),
        ]
    return conversation


def test_structured_request_without_thinking_forces_the_step_tool() -> None:
    api = MockAPI(messages_body(tool_use("submit_step", CROP_INPUT, "toolu_9"), stop_reason="tool_use"))
    turn = call(api, cfg=NO_THINKING)
    body = api.last
    assert body["max_tokens"] == 30000 and "thinking" not in body
    assert body["tools"] == [
        {
            "name": "submit_step",
            "description": body["tools"][0]["description"],
            "input_schema": step_schema(("crop", "answer")),
        }
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "submit_step"}
    assert body["system"] == [
        {"type": "text", "text": "You are a pathologist.", "cache_control": {"type": "ephemeral"}}
    ]
    image = body["messages"][0]["content"][1]
    assert image["source"]["type"] == "base64" and image["source"]["media_type"] == "image/jpeg"
    assert base64.b64decode(image["source"]["data"])[:3] == b"\xff\xd8\xff"
    headers = api.headers[-1]
    assert KEY in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))
    assert KEY not in json.dumps(body)
    assert turn.steps == [
        Step(reasoning="look", action=CropAction(x=1, y=2, width=3, height=4), call_id="toolu_9")
    ]


def test_thinking_uses_auto_tool_choice_and_reads_text_replies() -> None:
    json_reply = json.dumps({"reasoning": "r", "action": {"type": "note", "text": "mitoses", "x": None}})
    api = MockAPI(
        messages_body(text_block(f"Here is my step:\n{json_reply}")),
        messages_body(text_block('<report>ok</report>\n<response>{"answer": 2}</response>')),
    )
    first = call(api, CFG, ctx=make_ctx(extra_actions=("note",)))
    body = api.requests[0]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert body["tool_choice"] == {"type": "auto"}
    assert first.steps[0].action == NoteAction(text="mitoses")
    second = call(api, CFG)
    assert second.steps[0].action == AnswerAction(
        text='<report>ok</report>\n<response>{"answer": 2}</response>'
    )


# ----------------------------------------------------------------------------- messy replies (issue 9)


def test_step_tool_input_with_the_action_as_a_json_string_is_decoded() -> None:
    """Claude sometimes sends the nested action of the step tool as a JSON-encoded string."""
    stringified = {"reasoning": "look", "action": json.dumps(CROP_INPUT["action"])}
    api = MockAPI(messages_body(tool_use("submit_step", stringified, "toolu_9"), stop_reason="tool_use"))
    turn = call(api, cfg=NO_THINKING)
    assert turn.steps == [
        Step(reasoning="look", action=CropAction(x=1, y=2, width=3, height=4), call_id="toolu_9")
    ]
    assert turn.decode_note == "JSON string decoded in action"
    assert json.dumps(stringified) in turn.raw_text


MESSY = messy_replies(json.dumps(CROP_INPUT), json.dumps({**CROP_INPUT, "action": {**CROP, "y": -22000}}))


@pytest.mark.parametrize("case", list(MESSY))
def test_thinking_text_reply_takes_the_first_valid_step(case: str) -> None:
    """With thinking on the step may come as text, with the same chatter as from any model."""
    reply, phrase = MESSY[case]
    turn = call(MockAPI(messages_body(text_block(reply))), CFG)
    assert [s.action for s in turn.steps] == [CropAction(x=1, y=2, width=3, height=4)]
    assert turn.raw_text == reply.strip()
    assert turn.decode_note is not None and phrase in turn.decode_note


def test_cache_breakpoints_on_system_and_the_last_two_calls_newest_messages() -> None:
    api = MockAPI(messages_body(text_block("done")))
    call(api, cfg=TOOLS_CFG, conversation=history(2))
    marked = [
        (m, b, n, inner["type"])
        for m, message in enumerate(api.last["messages"])
        for b, block in enumerate(message["content"])
        for n, inner in enumerate([block, *(block["content"] if block["type"] == "tool_result" else [])])
        if "cache_control" in inner
    ]
    # inside each tool result (n = 0 is the result itself): the text before the oldest crop image
    # (the part a max_images_in_context drop keeps), the end of the previous call's newest message
    # (its write, read back) and the end of this call's
    assert marked == [(2, 0, 1, "text"), (2, 0, 2, "image"), (4, 0, 2, "image")]
    assert api.last["system"][0]["cache_control"] == {"type": "ephemeral"}
    no_cache = MockAPI(messages_body(text_block("done")))
    call(no_cache, cfg=TOOLS_CFG.model_copy(update={"prompt_caching": False}), conversation=history(2))
    assert "cache_control" not in json.dumps(no_cache.last)


def test_tools_mode_executes_only_the_first_tool_call() -> None:
    api = MockAPI(
        messages_body(
            text_block("Two regions."),
            tool_use("slide_zoom", {"x0": 1, "y0": 2, "w": 30, "h": 40}, "toolu_a"),
            tool_use("slide_zoom", {"x0": 5, "y0": 6, "w": 70, "h": 80}, "toolu_b"),
            stop_reason="tool_use",
        )
    )
    turn = call(api, cfg=TOOLS_CFG)
    assert [t["name"] for t in api.last["tools"]] == ["slide_zoom"]
    assert api.last["tools"][0]["input_schema"]["properties"]["w"]["exclusiveMinimum"] == 0
    assert api.last["tool_choice"] == {"type": "auto"}
    assert turn.steps == [
        Step(reasoning="Two regions.", action=CropAction(x=1, y=2, width=30, height=40), call_id="toolu_a")
    ]


def test_tools_mode_final_step_and_text_answer() -> None:
    api = MockAPI(messages_body(text_block('<response>{"answer": 1}</response>')))
    turn = call(api, cfg=TOOLS_CFG, ctx=make_ctx(must_answer=True))
    assert api.last["tool_choice"] == {"type": "auto"}  # constant, so the message cache holds
    assert isinstance(turn.steps[0].action, AnswerAction)


SIGNATURE = "EqQBCkYIARgCIkD" + "s" * 500  # opaque, as the server signs it


def test_history_renders_tool_use_and_results_and_resends_thinking(tmp_path: Path) -> None:
    record = tmp_path / "calls.jsonl"
    thinking = {"type": "thinking", "thinking": "hmm", "signature": SIGNATURE}
    api = MockAPI(
        messages_body(
            thinking,
            tool_use("slide_zoom", {"x0": 1, "y0": 2, "w": 3, "h": 4}, "toolu_0"),
            stop_reason="tool_use",
        ),
        messages_body(text_block("final")),
    )

    async def go() -> None:
        provider = build_provider(TOOLS_CFG, http_client=api.client())
        context = agent_context()  # the agent's own holder copies the turn's thinking along
        turn = await provider.next_turn(context.render(), make_ctx(record_path=str(record)))
        context.add_assistant(turn)
        context.add_user([TextPart(text="crop result"), ImagePartOf()], in_reply_to="toolu_0")
        await provider.next_turn(context.render(), make_ctx(step=2, record_path=str(record)))
        assert not [v for v in vars(provider).values() if isinstance(v, dict) and v]  # no episode state

    asyncio.run(go())
    assistant, result = api.last["messages"][1:]
    assert assistant["content"][0] == thinking  # re-sent unmodified before the tool use
    recorded = record.read_text()  # audit records keep the signature's length only
    assert SIGNATURE not in recorded and f"<signature {len(SIGNATURE)} chars>" in recorded
    assert assistant["content"][1] == {
        "type": "tool_use",
        "id": "toolu_0",
        "name": "slide_zoom",
        "input": {"x0": 1, "y0": 2, "w": 3, "h": 4},
    }
    block = result["content"][0]
    assert block["type"] == "tool_result" and block["tool_use_id"] == "toolu_0"
    assert [c["type"] for c in block["content"]] == ["text", "image"]


def test_thinking_is_resent_from_the_conversation_by_a_fresh_provider() -> None:
    """A restart or another process builds a new provider: the signed thinking (and redacted
    thinking) the conversation carries goes out as it came; thinking of a text-only turn does not."""
    crop = Step(reasoning="look", action=CropAction(x=1, y=2, width=3, height=4), call_id="toolu_5")
    said = Step(reasoning="so", action=AnswerAction(text="maybe"))
    signed = Reasoning(provider="anthropic", thinking="hmm", signature="sig==")
    redacted = Reasoning(provider="anthropic", signature="opaque==", redacted=True)
    other = Reasoning(provider="openai", id="rs_1", signature="gAAAA")
    conversation = make_conversation()
    conversation.messages += [
        AssistantMessage(steps=[said], reasoning=[signed]),
        UserMessage(parts=[TextPart(text="go on")]),
        AssistantMessage(steps=[crop], reasoning=[signed, redacted, other]),
        UserMessage(parts=[TextPart(text="crop result")], in_reply_to="toolu_5"),
    ]
    api = MockAPI(messages_body(text_block("final")))
    call(api, cfg=TOOLS_CFG, conversation=conversation)
    first, second = api.last["messages"][1], api.last["messages"][3]
    assert [b["type"] for b in first["content"]] == ["text"]
    assert second["content"][:3] == [
        {"type": "thinking", "thinking": "hmm", "signature": "sig=="},
        {"type": "redacted_thinking", "data": "opaque=="},
        {"type": "text", "text": "look"},
    ]


def ImagePartOf() -> Any:
    from giant.llm.types import ImagePart

    return ImagePart(image=make_image(), label="crop")


def test_structured_history_answers_the_step_tool_even_without_in_reply_to() -> None:
    conversation = make_conversation()
    step = Step(reasoning="look", action=CropAction(x=1, y=2, width=3, height=4), call_id="toolu_7")
    conversation.messages += [AssistantMessage(steps=[step]), UserMessage(parts=[TextPart(text="here")])]
    api = MockAPI(messages_body(tool_use("submit_step", CROP_INPUT, "toolu_8"), stop_reason="tool_use"))
    call(api, cfg=NO_THINKING, conversation=conversation)
    assistant, user = api.last["messages"][1:]
    assert assistant["content"][0]["type"] == "tool_use" and assistant["content"][0]["name"] == "submit_step"
    assert user["content"][0] == {"type": "tool_result", "tool_use_id": "toolu_7", "content": "Received."}
    assert user["content"][1] == {"type": "text", "text": "here", "cache_control": {"type": "ephemeral"}}


def test_usage_counts_cache_reads_and_writes_once() -> None:
    usage = {
        "input_tokens": 100,
        "cache_read_input_tokens": 5000,
        "cache_creation_input_tokens": 1000,
        "output_tokens": 300,
    }
    api = MockAPI((200, messages_body(text_block("x"), usage=usage), {"request-id": "req_ant"}))
    u = call(api, CFG).usage
    assert (u.input_tokens, u.cached_input_tokens, u.cache_write_tokens, u.output_tokens) == (
        6100,
        5000,
        1000,
        300,
    )
    # claude-opus-4-5 rates: input 5.00, cache read 0.50, cache write 6.25, output 25.00 $/M
    assert u.cost_usd == pytest.approx((100 * 5.0 + 5000 * 0.50 + 1000 * 6.25 + 300 * 25.0) / 1e6)
    assert u.request_id == "req_ant"


def test_errors() -> None:
    with pytest.raises(RefusalError):
        call(MockAPI(messages_body(text_block("I can't."), stop_reason="refusal")), CFG)
    with pytest.raises(ParseError, match="max_tokens"):
        call(MockAPI(messages_body(text_block('{"reasoning": '), stop_reason="max_tokens")), CFG)
    bad = {"reasoning": "r", "action": {"type": "crop", "x": 1, "y": -22000, "width": 3, "height": 4}}
    with pytest.raises(ParseError) as err:
        call(
            MockAPI(messages_body(tool_use("submit_step", bad, "t"), stop_reason="tool_use")), cfg=NO_THINKING
        )
    assert "-22000" in err.value.raw_text
    overloaded = (
        529,
        {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
        {"retry-after-ms": "1"},
    )
    with pytest.raises(TransientError):
        call(MockAPI(overloaded, overloaded, overloaded), CFG)


def test_retry_on_429_then_success() -> None:
    limited = (
        429,
        {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}},
        {"retry-after-ms": "1"},
    )
    api = MockAPI(limited, messages_body(text_block("answer")))
    assert call(api, CFG).steps[0].action == AnswerAction(text="answer")
    assert len(api.requests) == 2


def test_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        build_provider(CFG)


def test_crop_size_default_is_500_for_claude() -> None:
    assert CFG.crop_size == 500 and provider_settings("openai", model="gpt-5").crop_size == 1000


def test_thinking_settings_the_api_would_reject_fail_early() -> None:
    with pytest.raises(ValueError, match=r"thinking_budget=1024 must be below provider\.max_tokens=1024"):
        provider_settings("anthropic", model="m", max_tokens=1024, thinking_budget=1024)
    with pytest.raises(ValueError, match="temperature"):
        provider_settings("anthropic", model="m", temperature=0.5)
    assert provider_settings("anthropic", model="m", temperature=0.5, thinking_budget=None).temperature == 0.5
