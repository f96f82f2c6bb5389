"""The openai provider through the real SDK: httpx2.MockTransport, and a stub server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from giant.errors import ConfigError
from giant.llm.config import ProviderConfig, provider_settings
from giant.llm.factory import build_provider
from giant.llm.runtime import estimate_tokens
from giant.llm.schema import step_schema
from giant.llm.types import (
    AnswerAction,
    AssistantMessage,
    CropAction,
    FatalProviderError,
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
from tests.llm.mock_api import (
    MockAPI,
    call,
    function_call,
    message,
    messy_replies,
    responses_body,
    step_json,
)

KEY = "sk-test-SECRET-0123456789"
CFG = provider_settings("openai", model="gpt-5")
TOOLS_CFG = CFG.model_copy(update={"protocol": "tools"})


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


CROP = {"type": "crop", "x": 100, "y": 200, "width": 3000, "height": 2000}


def test_structured_request_shape() -> None:
    api = MockAPI(responses_body(message(step_json(CROP))))
    call(api, CFG, conversation=make_conversation(n_images=2))
    body = api.last
    assert body["model"] == "gpt-5"
    assert body["instructions"] == "You are a pathologist."
    assert body["prompt_cache_key"] == "tcga/7"
    assert body["reasoning"] == {"effort": "high"}
    assert "temperature" not in body
    content = body["input"][0]["content"]
    assert content[0] == {"type": "input_text", "text": "Which cancer type is this?"}
    images = [c for c in content if c["type"] == "input_image"]
    assert len(images) == 2
    for image in images:
        assert image["detail"] == "high"
        prefix, data = image["image_url"].split(",", 1)
        assert prefix == "data:image/jpeg;base64"
        assert base64.b64decode(data)[:3] == b"\xff\xd8\xff"  # a real JPEG
    fmt = body["text"]["format"]
    assert fmt["type"] == "json_schema" and fmt["strict"] is True
    assert fmt["schema"]["properties"]["action"]["properties"]["type"]["enum"] == ["crop", "answer"]
    assert api.headers[-1]["authorization"] == f"Bearer {KEY}"
    assert KEY not in json.dumps(body)


def test_structured_final_step_keeps_the_schema_of_every_step() -> None:
    api = MockAPI(responses_body(message(step_json({"type": "answer", "text": "<response>1</response>"}))))
    turn = call(api, CFG, ctx=make_ctx(must_answer=True))
    # the schema is part of the cached prefix: the answer is demanded by the message, not the schema
    assert api.last["text"]["format"]["schema"] == step_schema(("crop", "answer"))
    assert turn.steps[0].action == AnswerAction(text="<response>1</response>")


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (CROP, CropAction(x=100, y=200, width=3000, height=2000)),
        ({"type": "answer", "text": "<report>r</report>"}, AnswerAction(text="<report>r</report>")),
        ({"type": "note", "text": "mitoses"}, NoteAction(text="mitoses")),
    ],
)
def test_structured_parses_each_action(action: dict[str, Any], expected: object) -> None:
    api = MockAPI(responses_body(message(step_json(action))))
    turn = call(api, CFG, ctx=make_ctx(extra_actions=("note",)))
    assert [s.action for s in turn.steps] == [expected]
    assert turn.steps[0].reasoning == "I see tumour on the left."
    assert turn.raw_text == step_json(action)


def test_usage_and_cost_with_cached_tokens() -> None:
    usage = {
        "input_tokens": 10_000,
        "input_tokens_details": {"cached_tokens": 8_000},
        "output_tokens": 500,
        "output_tokens_details": {"reasoning_tokens": 300},
        "total_tokens": 10_500,
    }
    turn = call(MockAPI(responses_body(message(step_json(CROP)), usage=usage)), CFG)
    u = turn.usage
    assert (u.input_tokens, u.cached_input_tokens, u.output_tokens, u.reasoning_tokens) == (
        10_000,
        8_000,
        500,
        300,
    )
    assert u.request_id == "req_123"
    assert u.latency_s > 0
    # gpt-5: 2000 uncached x $1.25 + 8000 cached x $0.125 + 500 output x $10 (reasoning inside output)
    assert u.cost_usd == pytest.approx((2_000 * 1.25 + 8_000 * 0.125 + 500 * 10.0) / 1e6)


def test_unknown_model_cost_is_none() -> None:
    api = MockAPI(responses_body(message(step_json(CROP))))
    turn = call(api, cfg=CFG.model_copy(update={"model": "my-private-model"}))
    assert turn.usage.cost_usd is None
    assert turn.usage.input_tokens == 1000


def test_retry_on_429_then_success() -> None:
    limited = (429, {"error": {"message": "slow down", "type": "rate_limit"}}, {"retry-after-ms": "1"})
    api = MockAPI(limited, responses_body(message(step_json(CROP))))
    turn = call(api, CFG)
    assert len(api.requests) == 2
    assert isinstance(turn.steps[0].action, CropAction)


def test_429_after_the_pacers_retries_is_not_retried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("giant.llm.runtime.RATE_LIMIT_RETRIES", 2)
    limited = (429, {"error": {"message": "slow down"}}, {"retry-after-ms": "1"})
    api = MockAPI(limited, limited, limited, limited)
    with pytest.raises(TransientError, match="RateLimitError"):
        call(api, cfg=CFG.model_copy(update={"max_retries": 2}))
    assert len(api.requests) == 3  # 1 + the pacer's 2 retries; provider.max_retries adds none


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_fatal_and_never_show_the_key(status: int) -> None:
    body = {"error": {"message": f"Incorrect API key provided: {KEY}. sk-proj-abc***xyz", "type": "x"}}
    with pytest.raises(FatalProviderError) as err:
        call(MockAPI((status, body, {})), CFG)
    assert KEY not in str(err.value) and "sk-proj" not in str(err.value)
    assert str(status) in str(err.value)


def test_server_error_is_transient() -> None:
    api = MockAPI(*[(503, {"error": {"message": "busy"}}, {"retry-after-ms": "1"})] * 3)
    with pytest.raises(TransientError):
        call(api, CFG)


def test_invalid_json_is_a_parse_error_with_raw_text_and_usage() -> None:
    with pytest.raises(ParseError) as err:
        call(MockAPI(responses_body(message('{"reasoning": "x", "action": {'))), CFG)
    assert err.value.raw_text == '{"reasoning": "x", "action": {'
    assert err.value.usage is not None and err.value.usage.input_tokens == 1000


def test_negative_coordinate_is_a_parse_error() -> None:
    """paper_facts §11: the model once sent y = -22000."""
    reply = step_json({**CROP, "y": -22000})
    with pytest.raises(ParseError, match=r"action\.crop\.y") as err:
        call(MockAPI(responses_body(message(reply))), CFG)
    assert err.value.raw_text == reply


def test_refusal() -> None:
    with pytest.raises(RefusalError) as err:
        call(MockAPI(responses_body(message(refusal="I can't help with that."))), CFG)
    assert err.value.raw_text == "I can't help with that."


def test_truncated_reply_is_a_parse_error() -> None:
    body = responses_body(
        message('{"reasoning": "long'),
        status="incomplete",
        incomplete_details={"reason": "max_output_tokens"},
    )
    with pytest.raises(ParseError, match="max_output_tokens"):
        call(MockAPI(body), CFG)


def test_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        build_provider(CFG)
    monkeypatch.setenv("MY_KEY", "")
    with pytest.raises(ConfigError, match="MY_KEY"):
        build_provider(CFG.model_copy(update={"api_key_env": "MY_KEY"}))


def test_repr_hides_the_key() -> None:
    async def go() -> str:
        return repr(build_provider(CFG, http_client=MockAPI().client()))

    assert KEY not in asyncio.run(go())


# ----------------------------------------------------------------------------- tools mode


def test_tools_request_and_several_crops_in_order() -> None:
    zoom1 = function_call("slide_zoom", {"x0": 1, "y0": 2, "w": 30, "h": 40}, "call_a")
    zoom2 = function_call("slide_zoom", {"x0": 5, "y0": 6, "w": 70, "h": 80}, "call_b")
    api = MockAPI(responses_body(message("Two regions look suspicious."), zoom1, zoom2))
    turn = call(api, cfg=TOOLS_CFG, ctx=make_ctx(extra_actions=("note",)))
    body = api.last
    assert "text" not in body
    assert [t["name"] for t in body["tools"]] == ["slide_zoom", "note"]
    zoom = body["tools"][0]
    assert zoom["strict"] is True and zoom["type"] == "function"
    assert zoom["parameters"]["required"] == ["x0", "y0", "w", "h"]
    assert zoom["parameters"]["properties"]["x0"]["minimum"] == 0
    assert body["tool_choice"] == "auto"
    assert [s.action for s in turn.steps] == [
        CropAction(x=1, y=2, width=30, height=40),
        CropAction(x=5, y=6, width=70, height=80),
    ]
    assert [s.call_id for s in turn.steps] == ["call_a", "call_b"]
    assert turn.steps[0].reasoning == "Two regions look suspicious."


def test_tools_text_reply_is_the_answer_and_final_step_keeps_the_tools() -> None:
    text = '<report>Adenocarcinoma.</report>\n<response>{"answer": 3}</response>'
    api = MockAPI(responses_body(message(text)))
    turn = call(api, cfg=TOOLS_CFG, ctx=make_ctx(must_answer=True))
    assert api.last["tool_choice"] == "auto" and api.last["tools"][0]["name"] == "slide_zoom"
    assert turn.steps[0].action == AnswerAction(text=text)


def test_tools_invalid_arguments_are_a_parse_error() -> None:
    bad = function_call("slide_zoom", {"x0": -5, "y0": 2, "w": 30, "h": 40}, "c1")
    with pytest.raises(ParseError, match="slide_zoom") as err:
        call(MockAPI(responses_body(bad)), cfg=TOOLS_CFG)
    assert "-5" in err.value.raw_text
    with pytest.raises(ParseError, match="unknown tool"):
        call(MockAPI(responses_body(function_call("rm_rf", {}, "c2"))), cfg=TOOLS_CFG)


# ----------------------------------------------------------------------------- messy replies (issue 9)

MESSY = messy_replies(step_json(CROP), step_json({**CROP, "y": -22000}))


@pytest.mark.parametrize("case", list(MESSY))
def test_structured_takes_the_first_valid_step_of_a_messy_reply(case: str, tmp_path: Path) -> None:
    """Strict json_schema output still sometimes carries chatter or a repeat after the object."""
    reply, phrase = MESSY[case]
    record = tmp_path / "calls.jsonl"
    turn = call(MockAPI(responses_body(message(reply))), CFG, ctx=make_ctx(record_path=str(record)))
    assert [s.action for s in turn.steps] == [CropAction(x=100, y=200, width=3000, height=2000)]
    assert turn.raw_text == reply  # the whole reply stays in the record
    assert turn.decode_note is not None and phrase in turn.decode_note
    assert json.loads(record.read_text())["decode_note"] == turn.decode_note


def test_structured_action_sent_as_a_json_string_is_decoded() -> None:
    reply = json.dumps({"reasoning": "look", "action": json.dumps(CROP)})
    turn = call(MockAPI(responses_body(message(reply))), CFG)
    assert turn.steps[0].action == CropAction(x=100, y=200, width=3000, height=2000)
    assert turn.decode_note == "JSON string decoded in action"


def test_tools_history_renders_calls_and_their_results() -> None:
    crop = CropAction(x=1, y=2, width=30, height=40)
    conversation = make_conversation()
    conversation.messages += [
        AssistantMessage(steps=[Step(reasoning="look", action=crop, call_id="call_a")]),
        UserMessage(
            parts=[TextPart(text="crop (1, 2, 30, 40)"), *make_conversation().messages[0].parts[1:]],  # type: ignore[union-attr]
            in_reply_to="call_a",
        ),
    ]
    api = MockAPI(responses_body(message("answer")))
    call(api, cfg=TOOLS_CFG, conversation=conversation)
    items = api.last["input"]
    assert items[1] == {"role": "assistant", "content": "look"}
    assert items[2] == {
        "type": "function_call",
        "call_id": "call_a",
        "name": "slide_zoom",
        "arguments": json.dumps({"x0": 1, "y0": 2, "w": 30, "h": 40}),
    }
    assert items[3]["type"] == "function_call_output" and items[3]["call_id"] == "call_a"
    assert [p["type"] for p in items[3]["output"]] == ["input_text", "input_image"]


def test_tools_history_answers_calls_the_agent_did_not_answer() -> None:
    crops = [
        Step(reasoning="look", action=CropAction(x=1, y=2, width=30, height=40), call_id=call_id)
        for call_id in ("call_a", "call_b")
    ]
    conversation = make_conversation()
    conversation.messages += [
        AssistantMessage(steps=crops),
        UserMessage(parts=[TextPart(text="first crop")], in_reply_to="call_a"),
        UserMessage(parts=[TextPart(text="Please answer now.")]),
    ]
    api = MockAPI(responses_body(message("answer")))
    call(api, cfg=TOOLS_CFG, conversation=conversation)
    kinds = [(i.get("type") or i["role"], i.get("call_id")) for i in api.last["input"]]
    assert kinds == [
        ("user", None),
        ("assistant", None),
        ("function_call", "call_a"),
        ("function_call", "call_b"),
        ("function_call_output", "call_a"),
        ("function_call_output", "call_b"),
        ("user", None),
    ]


def test_structured_history_resends_the_models_json() -> None:
    conversation = make_conversation()
    raw = step_json(CROP)
    step = Step(reasoning="r", action=CropAction(x=100, y=200, width=3000, height=2000))
    conversation.messages += [
        AssistantMessage(steps=[step], raw_text=raw),
        UserMessage(parts=[TextPart(text="here is the crop")]),
    ]
    api = MockAPI(responses_body(message(step_json(CROP))))
    call(api, CFG, conversation=conversation)
    assert api.last["input"][1] == {"role": "assistant", "content": raw}
    assert api.last["input"][2]["role"] == "user"


# ----------------------------------------------------------------------------- reasoning items

SECRET_REASONING = "gAAAA" + "x" * 3000  # opaque, as the server sends it


def reasoning_item(item_id: str = "rs_1") -> dict[str, Any]:
    summary = [{"type": "summary_text", "text": "Tumour cells on the left."}]
    return {"type": "reasoning", "id": item_id, "summary": summary, "encrypted_content": SECRET_REASONING}


def episode(
    api: MockAPI, cfg: ProviderConfig, reply_text: str, *, record: Path | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two steps of one item on ONE provider: the first reply is kept as the agent keeps it (its
    Context turns it into an AssistantMessage), a result follows, the second call re-sends it all.
    Returns the two requests' input items."""

    async def go() -> None:
        provider = build_provider(cfg, http_client=api.client())
        context = agent_context()
        ctx = make_ctx(record_path=str(record) if record else None)
        turn = await provider.next_turn(context.render(), ctx)
        context.add_assistant(turn)
        context.add_user([TextPart(text=reply_text)], in_reply_to=turn.steps[0].call_id)
        await provider.next_turn(context.render(), ctx.model_copy(update={"step": 2}))

    asyncio.run(go())
    return api.requests[0]["input"], api.requests[1]["input"]


def test_structured_resends_reasoning_items_before_their_turn() -> None:
    api = MockAPI(
        responses_body(reasoning_item(), message(step_json(CROP))),
        responses_body(message(step_json({"type": "answer", "text": "1"}))),
    )
    first, second = episode(api, CFG, "here is the crop")
    assert api.requests[0]["include"] == ["reasoning.encrypted_content"]
    assert api.requests[1]["include"] == ["reasoning.encrypted_content"]
    assert all(i.get("type") != "reasoning" for i in first)
    assert [i.get("type") or i["role"] for i in second] == ["user", "reasoning", "assistant", "user"]
    assert second[1] == {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Tumour cells on the left."}],
        "encrypted_content": SECRET_REASONING,
    }
    assert second[2] == {"role": "assistant", "content": step_json(CROP)}


def test_tools_resends_reasoning_items_before_the_function_calls() -> None:
    api = MockAPI(
        responses_body(
            reasoning_item(),
            function_call("slide_zoom", {"x0": 1, "y0": 2, "w": 30, "h": 40}, "call_a"),
        ),
        responses_body(message("answer")),
    )
    _, second = episode(api, TOOLS_CFG, "crop (1, 2, 30, 40)")
    kinds = [i.get("type") or i["role"] for i in second]
    assert kinds == ["user", "reasoning", "function_call", "function_call_output"]
    assert second[1]["id"] == "rs_1" and second[1]["encrypted_content"] == SECRET_REASONING
    assert second[2]["call_id"] == "call_a"


def test_without_reasoning_effort_no_include_and_no_reasoning_items() -> None:
    api = MockAPI(
        responses_body(reasoning_item(), message(step_json(CROP))),
        responses_body(message(step_json({"type": "answer", "text": "1"}))),
    )
    _, second = episode(api, CFG.model_copy(update={"reasoning_effort": None}), "here is the crop")
    assert all("include" not in r and "reasoning" not in r for r in api.requests)
    assert [i.get("type") or i["role"] for i in second] == ["user", "assistant", "user"]


def test_a_conversation_without_reasoning_parts_is_sent_without_reasoning_items() -> None:
    """A history from another provider or an older trajectory carries no reasoning: none is sent."""
    conversation = make_conversation()
    step = Step(reasoning="r", action=CropAction(x=100, y=200, width=3000, height=2000))
    conversation.messages += [
        AssistantMessage(steps=[step], raw_text=step_json(CROP)),
        UserMessage(parts=[TextPart(text="here is the crop")]),
    ]
    api = MockAPI(responses_body(message(step_json(CROP))))
    call(api, CFG, conversation=conversation)
    assert [i.get("type") or i["role"] for i in api.last["input"]] == ["user", "assistant", "user"]


def test_recording_keeps_only_the_length_of_encrypted_reasoning(tmp_path: Path) -> None:
    record = tmp_path / "calls.jsonl"
    api = MockAPI(
        responses_body(reasoning_item(), message(step_json(CROP))),
        responses_body(message(step_json({"type": "answer", "text": "1"}))),
    )
    _, second = episode(api, CFG, "here is the crop", record=record)
    assert second[1]["encrypted_content"] == SECRET_REASONING  # the wire still carries it
    text = record.read_text()
    assert SECRET_REASONING not in text
    lines = [json.loads(line) for line in text.splitlines()]
    label = f"<encrypted_content {len(SECRET_REASONING)} chars>"
    assert lines[0]["response"]["output"][0]["encrypted_content"] == label
    assert lines[1]["request"]["input"][1] == {**second[1], "encrypted_content": label}


def test_reasoning_items_come_from_the_conversation_not_the_provider() -> None:
    """A fresh provider (a restart, another process) re-sends the items the conversation carries;
    an item another provider made is skipped, and an id repeated in the history is sent once."""
    conversation = make_conversation()
    step = Step(reasoning="r", action=CropAction(x=100, y=200, width=3000, height=2000))
    mine = Reasoning(provider="openai", id="rs_9", summary=["left"], signature=SECRET_REASONING)
    theirs = Reasoning(provider="anthropic", thinking="hmm", signature="sig==")
    conversation.messages += [
        AssistantMessage(steps=[step], raw_text=step_json(CROP), reasoning=[mine, theirs]),
        UserMessage(parts=[TextPart(text="here is the crop")]),
        AssistantMessage(steps=[step], raw_text=step_json(CROP), reasoning=[mine]),
        UserMessage(parts=[TextPart(text="and again")]),
    ]
    api = MockAPI(responses_body(message(step_json(CROP))))
    call(api, CFG, conversation=conversation)
    sent = api.last["input"]
    assert [i.get("type") or i["role"] for i in sent] == [
        "user",
        "reasoning",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert sent[1] == {
        "type": "reasoning",
        "id": "rs_9",
        "summary": [{"type": "summary_text", "text": "left"}],
        "encrypted_content": SECRET_REASONING,
    }


def test_interleaved_episodes_on_one_provider_keep_their_own_reasoning() -> None:
    """Two episodes of the same item and run index (an authors-mode restart, a rerun) whose first
    replies are the same text but carry different reasoning: each re-sends its own."""
    replies: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
    order = ["A", "B", "A", "B"]
    api = MockAPI(
        responses_body(reasoning_item("rs_A"), message(step_json(CROP))),
        responses_body(reasoning_item("rs_B"), message(step_json(CROP))),
        responses_body(message(step_json({"type": "answer", "text": "1"}))),
        responses_body(message(step_json({"type": "answer", "text": "2"}))),
    )

    async def go() -> None:
        provider = build_provider(CFG, http_client=api.client())
        contexts = {"A": agent_context(), "B": agent_context()}
        for n, name in enumerate(order):
            context = contexts[name]
            turn = await provider.next_turn(context.render(), make_ctx(step=n // 2 + 1))
            context.add_assistant(turn)
            context.add_user([TextPart(text="here is the crop")])
        assert not [v for v in vars(provider).values() if isinstance(v, dict) and v]  # no episode state

    asyncio.run(go())
    for request, name in zip(api.requests, order, strict=True):
        replies[name].append(request)
    for name in ("A", "B"):
        second = replies[name][1]["input"]
        assert [i["id"] for i in second if i.get("type") == "reasoning"] == [f"rs_{name}"]


# ----------------------------------------------------------------------------- recording, limits


def test_recording_replaces_images_and_omits_the_key(tmp_path: Path) -> None:
    record = tmp_path / "calls.jsonl"
    image = make_image((0, 80, 90))  # the image make_conversation() puts first
    call(MockAPI(responses_body(message(step_json(CROP)))), CFG, ctx=make_ctx(record_path=str(record)))
    with pytest.raises(ParseError):
        call(MockAPI(responses_body(message("nope"))), CFG, ctx=make_ctx(record_path=str(record), step=2))
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [line["step"] for line in lines] == [1, 2]
    assert lines[0]["error"] is None and lines[1]["error"].startswith("parse")
    text = record.read_text()
    assert image.data_b64 not in text and KEY not in text
    assert f"<image sha256={image.sha256} label='image 0'>" in text
    assert lines[0]["response"]["output"][0]["content"][0]["text"] == step_json(CROP)


def test_token_limiter_is_shared_by_concurrent_calls() -> None:
    """tpm below two requests' worth: the second concurrent call must wait (a minute), the first not."""
    cfg = CFG.model_copy(update={"tpm": estimate_tokens(make_conversation()) + 1})
    api = MockAPI(*[responses_body(message(step_json(CROP)))] * 2)

    async def go() -> tuple[int, int]:
        provider = build_provider(cfg, http_client=api.client())
        first = asyncio.ensure_future(provider.next_turn(make_conversation(), make_ctx()))
        second = asyncio.ensure_future(provider.next_turn(make_conversation(), make_ctx()))
        done, pending = await asyncio.wait({first, second}, timeout=0.5)
        for task in pending:
            task.cancel()
        return len(done), len(pending)

    assert asyncio.run(go()) == (1, 1)


# ----------------------------------------------------------------------------- real HTTP stub server


@pytest.fixture
def stub_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []
    reply = json.dumps(responses_body(message(step_json(CROP)))).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["content-length"])
            seen.append({"path": self.path, "body": json.loads(self.rfile.read(length))})
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("x-request-id", "req_stub")
            self.send_header("content-length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    server.shutdown()
    server.server_close()


def test_openai_against_a_stub_server(stub_server: tuple[str, list[dict[str, Any]]]) -> None:
    base_url, seen = stub_server
    cfg = CFG.model_copy(update={"base_url": base_url})

    turn = call(None, cfg)  # the SDK's own HTTP client, over a real socket
    assert seen[0]["path"] == "/v1/responses"
    assert seen[0]["body"]["prompt_cache_key"] == "tcga/7"
    assert turn.steps[0].action == CropAction(x=100, y=200, width=3000, height=2000)
    assert turn.usage.request_id == "req_stub"
