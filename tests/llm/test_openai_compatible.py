"""The openai_compatible provider (Chat Completions at any base_url) through the real SDK."""

from __future__ import annotations

import json

import pytest

from giant.errors import ConfigError
from giant.llm.config import ProviderConfig, provider_settings
from giant.llm.factory import check_credentials
from giant.llm.schema import step_schema
from giant.llm.types import CropAction, ParseError, RefusalError
from tests.llm.mock_api import MockAPI, call, chat_body, messy_replies, step_json

CFG = provider_settings("openai_compatible", model="qwen2.5-vl", base_url="http://127.0.0.1:9/v1")
LOOSE = CFG.model_copy(update={"json_schema": "none"})
CROP = {"type": "crop", "x": 10, "y": 20, "width": 30, "height": 40}


def test_schema_server_gets_response_format_and_images() -> None:
    api = MockAPI(chat_body(step_json(CROP)))
    turn = call(api, CFG)
    body = api.last
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "giant_step", "strict": True, "schema": step_schema(("crop", "answer"))},
    }
    assert body["messages"][0] == {"role": "system", "content": "You are a pathologist."}
    image = body["messages"][1]["content"][1]
    assert image["type"] == "image_url" and image["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert "reasoning_effort" not in body and "prompt_cache_key" not in body
    assert api.headers[-1]["authorization"] == "Bearer not-needed"
    assert turn.steps[0].action == CropAction(x=10, y=20, width=30, height=40)
    assert (turn.usage.input_tokens, turn.usage.cached_input_tokens, turn.usage.output_tokens) == (
        900,
        100,
        50,
    )
    assert turn.usage.cost_usd is None  # a local model is not in the price table: unknown, not 0


def test_server_without_schema_support_gets_the_schema_in_the_prompt_and_tolerant_parsing() -> None:
    chatty = f"Sure! Here is my step:\n```json\n{step_json(CROP)}\n```\nHope this helps."
    api = MockAPI(chat_body(chatty))
    turn = call(api, cfg=LOOSE)
    assert "response_format" not in api.last
    system = api.last["messages"][0]["content"]
    assert system.startswith("You are a pathologist.")
    assert json.dumps(step_schema(("crop", "answer"))) in system
    assert turn.steps[0].action == CropAction(x=10, y=20, width=30, height=40)
    assert turn.raw_text == chatty


MESSY = messy_replies(step_json(CROP), step_json({**CROP, "x": -1}))


@pytest.mark.parametrize("cfg", [CFG, LOOSE], ids=["json_schema", "tolerant"])
@pytest.mark.parametrize("case", list(MESSY))
def test_the_first_valid_step_of_a_messy_reply_is_taken(case: str, cfg: ProviderConfig) -> None:
    reply, phrase = MESSY[case]
    turn = call(MockAPI(chat_body(reply)), cfg)
    assert [s.action for s in turn.steps] == [CropAction(x=10, y=20, width=30, height=40)]
    assert turn.raw_text == reply
    assert turn.decode_note is not None and phrase in turn.decode_note


def test_parse_failures_and_refusal() -> None:
    with pytest.raises(ParseError, match="no complete JSON object") as err:
        call(MockAPI(chat_body("I think it is a carcinoma.")), cfg=LOOSE)
    assert err.value.raw_text == "I think it is a carcinoma."
    with pytest.raises(ParseError, match=r"action\.crop\.x"):
        call(MockAPI(chat_body(step_json({**CROP, "x": -1}))), CFG)
    with pytest.raises(ParseError, match="length"):
        call(MockAPI(chat_body('{"reasoning": "a', finish_reason="length")), CFG)
    with pytest.raises(RefusalError):
        call(MockAPI(chat_body(None, refusal="No.")), CFG)


def test_configuration_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    check_credentials(CFG)  # local servers need no key
    with pytest.raises(ConfigError, match=r"provider\.base_url is required"):
        provider_settings("openai_compatible", model="m")
    with pytest.raises(ConfigError, match=r"provider\.protocol=tools: Input should be 'structured'"):
        provider_settings("openai_compatible", model="m", base_url="http://x/v1", protocol="tools")
    monkeypatch.delenv("VLLM_KEY", raising=False)
    with pytest.raises(ConfigError, match="VLLM_KEY"):
        check_credentials(CFG.model_copy(update={"api_key_env": "VLLM_KEY"}))
