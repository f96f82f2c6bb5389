"""Open-weight servers as they are (issue 20): reasoning models' <think> text and reasoning fields,
structured output as each server takes it (response_format, guided_json, none), and max_tokens
against what the prompt leaves of the model's context."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from giant.llm.config import provider_settings
from giant.llm.decode import decode_step, split_thinking
from giant.llm.image_tokens import gemma3, qwen3_vl
from giant.llm.providers.openai_compatible import OpenAICompatibleSettings
from giant.llm.providers.openai_compatible.provider import MIN_REPLY_TOKENS, OpenAICompatibleProvider
from giant.llm.schema import step_schema
from giant.llm.types import (
    AnswerAction,
    AssistantMessage,
    Conversation,
    CropAction,
    FatalProviderError,
    ModelTurn,
    ParseError,
    TextPart,
    UserMessage,
)
from tests.llm.conftest import make_conversation, make_ctx
from tests.llm.mock_api import MockAPI, call, chat_body, step_json
from tests.llm.open_server import OpenServer, serving

QWEN3 = "Qwen/Qwen3-VL-8B-Thinking"
CROP = {"type": "crop", "x": 10, "y": 20, "width": 30, "height": 40}
DECOY = {"type": "crop", "x": 1, "y": 2, "width": 3, "height": 4}  # a valid step, inside the thinking
THINKING = f"Let me look. I could crop with {step_json(DECOY)} but the left is better."


def settings(**extra: object) -> OpenAICompatibleSettings:
    fields: dict[str, object] = {"base_url": "http://127.0.0.1:9/v1", **extra}
    cfg = provider_settings("openai_compatible", model=QWEN3, **fields)
    assert isinstance(cfg, OpenAICompatibleSettings)
    return cfg


# ----------------------------------------------------------------------------- <think> text


def test_the_think_block_is_taken_out_so_a_step_inside_it_is_never_the_step() -> None:
    reply = f"<think>\n{THINKING}\n</think>\n\n{step_json(CROP)}"
    assert decode_step(reply).value.action == CropAction(x=1, y=2, width=3, height=4)  # why it matters
    thought = split_thinking(reply)
    assert thought.thinking == THINKING
    assert decode_step(thought.text).value.action == CropAction(x=10, y=20, width=30, height=40)


def test_a_think_block_opened_by_the_chat_template_ends_at_its_close_tag() -> None:
    # DeepSeek-R1 distills: the template ends the prompt with "<think>\n", the reply has only "</think>".
    thought = split_thinking(f"{THINKING}\n</think>\n{step_json(CROP)}")
    assert thought.thinking == THINKING
    assert decode_step(thought.text).value.action == CropAction(x=10, y=20, width=30, height=40)


def test_a_reply_that_opens_with_its_json_is_never_split() -> None:
    reply = step_json(CROP, reasoning="the model wrote </think> in its reasoning")
    assert split_thinking(reply).thinking is None and split_thinking(reply).text == reply
    assert split_thinking("no thinking here").thinking is None


def test_an_unclosed_think_block_is_a_decode_failure_that_says_so() -> None:
    with pytest.raises(ParseError, match=r"unclosed <think> block \(\d+ chars of thinking, no step\)") as err:
        split_thinking(f"<think>\n{THINKING} and then {step_json(CROP)}")
    assert "provider.max_tokens" in str(err.value) and err.value.raw_text.startswith("<think>")


def test_the_provider_keeps_the_think_text_as_the_turns_reasoning_and_never_sends_it_back() -> None:
    reply = f"<think>\n{THINKING}\n</think>\n\n{step_json(CROP)}"
    api = MockAPI(chat_body(reply), chat_body(step_json({"type": "answer", "text": "2"})))
    turn = call(api, settings())
    assert turn.steps[0].action == CropAction(x=10, y=20, width=30, height=40)
    assert turn.raw_text == reply  # the record keeps the whole reply
    assert [(r.provider, r.thinking) for r in turn.reasoning] == [("openai_compatible", THINKING)]
    assert turn.decode_note is not None and "<think> block taken out before decoding" in turn.decode_note
    conversation = make_conversation()
    conversation.messages.append(
        AssistantMessage(steps=turn.steps, raw_text=turn.raw_text, reasoning=turn.reasoning)
    )
    conversation.messages.append(UserMessage(parts=[TextPart(text="Here is the crop.")]))
    call(api, settings(), conversation, make_ctx(step=2))
    said = api.last["messages"][2]
    assert said == {"role": "assistant", "content": step_json(CROP)}


def test_a_reply_cut_inside_its_think_block_names_the_cause() -> None:
    api = MockAPI(chat_body(f"<think>\n{THINKING}", finish_reason="length"))
    with pytest.raises(ParseError) as err:
        call(api, settings())
    message = str(err.value)
    assert message.startswith("openai_compatible: the reply ended inside its unclosed <think> block")
    assert message.endswith("(finish_reason=length)")


@pytest.mark.parametrize("name", ["reasoning_content", "reasoning"])
def test_a_reasoning_parsers_field_beside_content_is_the_turns_reasoning(name: str) -> None:
    body = chat_body(step_json(CROP))
    body["choices"][0]["message"][name] = THINKING
    turn = call(MockAPI(body), settings())
    assert turn.steps[0].action == CropAction(x=10, y=20, width=30, height=40)
    assert [r.thinking for r in turn.reasoning] == [THINKING]
    assert turn.decode_note is None


def _turns(server: OpenServer, cfg: OpenAICompatibleSettings) -> list[ModelTurn]:
    """Two turns against the stub through the real SDK: the crop, then the answer."""

    async def go() -> list[ModelTurn]:
        provider = OpenAICompatibleProvider(cfg)
        conversation = make_conversation()
        first = await provider.next_turn(conversation, make_ctx())
        conversation.messages.append(
            AssistantMessage(steps=first.steps, raw_text=first.raw_text, reasoning=first.reasoning)
        )
        conversation.messages.append(UserMessage(parts=[TextPart(text="Here is the crop.")]))
        return [first, await provider.next_turn(conversation, make_ctx(step=2))]

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("think", "field"), [(True, None), (False, "reasoning_content"), (False, "reasoning")]
)
def test_a_reasoning_model_served_by_vllm_navigates(think: bool, field: str | None) -> None:
    server = OpenServer("vllm", models=(QWEN3,), think=think, reasoning_field=field)
    with serving(server) as base_url:
        first, second = _turns(server, settings(base_url=base_url))
    assert first.steps[0].action == CropAction(x=0, y=0, width=400, height=400)  # not the decoy answer
    assert second.steps[0].action == AnswerAction(text="1")
    assert all(turn.reasoning and "would be wrong" in turn.reasoning[0].thinking for turn in (first, second))
    assert "<think>" not in json.dumps(server.bodies[1]["messages"])


# ----------------------------------------------------------------------------- structured output


def test_each_server_gets_the_schema_where_it_takes_it() -> None:
    schema = step_schema(("crop", "answer"))
    server = OpenServer("vllm", models=(QWEN3,))
    with serving(server) as base_url:
        for mode in ("response_format", "guided_json", "none"):
            _turns(server, settings(base_url=base_url, json_schema=mode))
    by_mode = dict(zip(("response_format", "guided_json", "none"), server.bodies[::2], strict=True))
    assert by_mode["response_format"]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "giant_step", "strict": True, "schema": schema},
    }
    assert "guided_json" not in by_mode["response_format"]
    assert by_mode["guided_json"]["guided_json"] == schema  # a top-level body field, as vLLM reads it
    assert "response_format" not in by_mode["guided_json"]
    stated = by_mode["none"]
    assert "response_format" not in stated and "guided_json" not in stated
    assert json.dumps(schema) in stated["messages"][0]["content"]


@pytest.mark.parametrize(("old", "new"), [(True, "response_format"), (False, "none")])
def test_old_configs_true_and_false_still_read(old: bool, new: str) -> None:
    assert settings(json_schema=old).json_schema == new


def test_the_shipped_default_is_response_format() -> None:
    assert settings().json_schema == "response_format"


# ----------------------------------------------------------------------------- max_tokens


def _long(chars: int) -> Conversation:
    conversation = make_conversation()
    conversation.messages.append(UserMessage(parts=[TextPart(text="x" * chars)]))
    return conversation


def _prompt(cfg: OpenAICompatibleSettings, conversation: Conversation) -> int:
    return OpenAICompatibleProvider(cfg).prompt_tokens(conversation)


def test_max_tokens_is_capped_at_what_the_prompt_leaves_of_the_context() -> None:
    cfg = settings(max_model_len=8192, max_tokens=4096)
    conversation = _long(24_000)  # about 6,000 tokens of text
    prompt = _prompt(cfg, conversation)
    api = MockAPI(chat_body(step_json(CROP)))
    call(api, cfg, conversation)
    assert 6000 <= prompt < 8192 - MIN_REPLY_TOKENS
    assert api.last["max_tokens"] == 8192 - prompt < 4096
    call(api := MockAPI(chat_body(step_json(CROP))), cfg)  # a short prompt keeps the setting
    assert api.last["max_tokens"] == 4096


def test_an_unknown_context_or_no_max_tokens_sends_the_setting_as_it_is() -> None:
    api = MockAPI(chat_body(step_json(CROP)), chat_body(step_json(CROP)))
    call(api, settings(max_tokens=4096), _long(200_000))  # context unknown: the server decides
    assert api.last["max_tokens"] == 4096
    call(api, settings(max_model_len=65536), _long(24_000))  # unset: vLLM gives the reply what is left
    assert "max_tokens" not in api.last


def test_the_provider_reads_the_image_rule_of_the_models_family() -> None:
    conversation = make_conversation(3)
    qwen = _prompt(settings(), conversation)
    gemma = _prompt(settings(image_tokens="gemma3"), conversation)
    assert gemma - qwen == 3 * (gemma3(16, 12) - qwen3_vl(16, 12))  # a Qwen3 model: qwen3_vl by name


def test_a_prompt_leaving_less_than_the_floor_is_the_context_error_before_any_call() -> None:
    api = MockAPI()
    conversation = _long(31_500)
    cfg = settings(max_model_len=8000, max_tokens=4096)
    prompt = _prompt(cfg, conversation)
    assert 0 < 8000 - prompt < MIN_REPLY_TOKENS
    with pytest.raises(FatalProviderError) as err:
        call(api, cfg, conversation)
    assert api.requests == []  # no call spent
    assert err.value.cause == "context"
    message = str(err.value)
    assert message.startswith(
        "openai_compatible: the request exceeds the model's context (max_model_len 8000;"
    )
    assert f"a prompt of about {prompt:,} tokens leaves {8000 - prompt:,} for the reply" in message
    assert message.endswith(
        "lower agent.max_images_in_context or agent.crop_size (the dry run's context fit names values "
        "that fit), or serve the model with a larger --max-model-len"
    )


def test_the_floor_is_the_setting_when_max_tokens_is_below_it() -> None:
    conversation = _long(30_000)
    prompt = _prompt(settings(), conversation)
    api = MockAPI(chat_body(step_json(CROP)))
    call(api, settings(max_model_len=prompt + 100, max_tokens=64), conversation)
    assert api.last["max_tokens"] == 64
    with pytest.raises(FatalProviderError):
        call(MockAPI(), settings(max_model_len=prompt + 100), conversation)  # below MIN_REPLY_TOKENS


def test_the_context_the_preflight_read_caps_the_run_as_the_setting_does() -> None:
    server = OpenServer("vllm", models=(QWEN3,), max_model_len=1024)
    with serving(server) as base_url:

        async def go() -> Any:
            provider = OpenAICompatibleProvider(settings(base_url=base_url, max_tokens=4096))
            provider.max_model_len = 1024  # what check_server stores after GET /v1/models
            return await provider.next_turn(make_conversation(), make_ctx())

        asyncio.run(go())
    assert 0 < server.bodies[0]["max_tokens"] < 1024


@pytest.mark.parametrize(("old", "new"), [(True, "response_format"), (False, "none")])
def test_the_choice_is_recorded_as_the_old_boolean_so_paid_calls_still_replay(old: bool, new: str) -> None:
    """The run key and the ledger key hash the settings' dump: a config written before the choice
    existed and the same config written today must hash alike, or every paid reply is paid again."""
    before, today = settings(json_schema=old), settings(json_schema=new)
    assert today.json_schema == new
    assert today.model_dump(mode="json") == before.model_dump(mode="json")
    assert today.model_dump(mode="json")["json_schema"] is old
    assert settings(json_schema="guided_json").model_dump(mode="json")["json_schema"] == "guided_json"
