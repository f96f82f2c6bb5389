"""The conch action through the real OpenAI and Anthropic SDKs (httpx2.MockTransport): the schema and
tools they are sent, and the replies they decode into a ConchAction."""

from __future__ import annotations

import json

import pytest

from giant.llm.config import provider_settings
from giant.tools.conch.settings import HYPOTHESES_CAP
from giant.tools.conch.tool import ConchAction
from tests.llm.conftest import make_ctx
from tests.llm.mock_api import MockAPI, call, function_call, message, messages_body, responses_body, tool_use

OPENAI = provider_settings("openai", model="gpt-5")
ANTHROPIC = provider_settings("anthropic", model="claude-opus-4-5")
HYPOTHESES = ["tumour cells in sheets", "normal mucosa"]
CTX = make_ctx(extra_actions=("conch",))


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")


def test_openai_strict_schema_offers_conch_and_decodes_it() -> None:
    flat = {"type": "conch", "x": None, "y": None, "width": None, "height": None, "text": None}
    reply = json.dumps({"reasoning": "ask", "action": {**flat, "hypotheses": HYPOTHESES}})
    api = MockAPI(responses_body(message(reply)))
    turn = call(api, cfg=OPENAI, ctx=CTX)
    schema = api.last["text"]["format"]["schema"]["properties"]["action"]
    assert "conch" in schema["properties"]["type"]["enum"] and "hypotheses" in schema["required"]
    hypotheses = schema["properties"]["hypotheses"]
    assert hypotheses["type"] == ["array", "null"] and hypotheses["maxItems"] == HYPOTHESES_CAP
    assert turn.steps[0].action == ConchAction(hypotheses=HYPOTHESES)


def test_openai_tools_protocol_has_a_conch_function() -> None:
    api = MockAPI(responses_body(function_call("conch", {"hypotheses": HYPOTHESES}, "c1")))
    turn = call(api, cfg=OPENAI.model_copy(update={"protocol": "tools"}), ctx=CTX)
    [conch] = [tool for tool in api.last["tools"] if tool["name"] == "conch"]
    assert conch["parameters"]["required"] == ["hypotheses"]
    assert conch["parameters"]["properties"]["hypotheses"]["items"]["minLength"] == 1
    assert turn.steps[0].action == ConchAction(hypotheses=HYPOTHESES) and turn.steps[0].call_id == "c1"


def test_anthropic_tool_call_with_the_list_as_a_json_string_is_decoded() -> None:
    """Claude sometimes sends a nested value of a tool's input as a JSON-encoded string."""
    arguments = {"hypotheses": json.dumps(HYPOTHESES)}
    api = MockAPI(messages_body(tool_use("conch", arguments, "toolu_1"), stop_reason="tool_use"))
    turn = call(api, cfg=ANTHROPIC.model_copy(update={"protocol": "tools"}), ctx=CTX)
    assert "conch" in [tool["name"] for tool in api.last["tools"]]
    assert turn.steps[0].action == ConchAction(hypotheses=HYPOTHESES)
