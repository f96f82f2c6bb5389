"""A scripted HTTP peer for the real SDKs: httpx2.MockTransport handlers that record every request."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2

from giant.llm.config import ProviderConfig
from giant.llm.factory import build_provider
from giant.llm.types import CallContext, Conversation, ModelTurn
from tests.llm.conftest import make_conversation, make_ctx

Reply = dict[str, Any] | tuple[int, dict[str, Any], dict[str, str]]


class MockAPI:
    """Serves the queued replies in order (a dict is a 200 JSON body; a tuple is status, body,
    headers) and keeps each request's decoded JSON body and headers for assertions."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[httpx2.Headers] = []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(json.loads(request.content or b"{}"))
        self.headers.append(request.headers)
        reply = self.replies.pop(0)
        status, body, headers = reply if isinstance(reply, tuple) else (200, reply, {})
        return httpx2.Response(status, json=body, headers={"x-request-id": "req_123", **headers})

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handler))

    @property
    def last(self) -> dict[str, Any]:
        return self.requests[-1]


def call(
    api: MockAPI | None,
    cfg: ProviderConfig,
    conversation: Conversation | None = None,
    ctx: CallContext | None = None,
) -> ModelTurn:
    """One turn of the provider `cfg` names, through the real SDK talking to `api` (None: the SDK's
    own HTTP client). The provider is built inside the loop its calls run in."""

    async def go() -> ModelTurn:
        provider = build_provider(cfg, http_client=api.client() if api else None)
        return await provider.next_turn(conversation or make_conversation(), ctx or make_ctx())

    return asyncio.run(go())


def responses_body(
    *output: dict[str, Any],
    status: str = "completed",
    usage: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A Responses API reply as the server sends it."""
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "gpt-5",
        "status": status,
        "output": list(output),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage
        or {
            "input_tokens": 1000,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 100,
            "output_tokens_details": {"reasoning_tokens": 40},
            "total_tokens": 1100,
        },
        **extra,
    }


def message(text: str | None = None, refusal: str | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"type": "output_text", "text": text, "annotations": []})
    if refusal is not None:
        content.append({"type": "refusal", "refusal": refusal})
    return {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": content}


def function_call(name: str, arguments: dict[str, Any] | str, call_id: str) -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": args,
    }


def step_json(action: dict[str, Any], reasoning: str = "I see tumour on the left.") -> str:
    """A structured-mode reply: the flattened action with every other field null."""
    flat = {
        "type": None,
        "x": None,
        "y": None,
        "width": None,
        "height": None,
        "text": None,
    }
    return json.dumps({"reasoning": reasoning, "action": {**flat, **action}})


def messages_body(
    *content: dict[str, Any], stop_reason: str = "end_turn", usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An Anthropic Messages API reply as the server sends it."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-5",
        "content": list(content),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 1000, "output_tokens": 100},
    }


def tool_use(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def chat_body(content: str | None, finish_reason: str = "stop", refusal: str | None = None) -> dict[str, Any]:
    """A Chat Completions reply as an OpenAI-compatible server (vLLM, Ollama) sends it."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "qwen2.5-vl",
        "choices": [
            {
                "index": 0,
                "finish_reason": finish_reason,
                "message": {"role": "assistant", "content": content, "refusal": refusal},
            }
        ],
        "usage": {
            "prompt_tokens": 900,
            "completion_tokens": 50,
            "total_tokens": 950,
            "prompt_tokens_details": {"cached_tokens": 100},
        },
    }


def messy_replies(valid: str, invalid: str) -> dict[str, tuple[str, str]]:
    """Replies real models send around one valid step (`valid`, a JSON text), by case: the reply and
    a phrase the decoder's note must contain. `invalid` is a JSON step that fails validation."""
    return {
        "chatter_after": (f"{valid}\n\nI hope this helps!", "extra text after the JSON ignored"),
        "same_object_twice": (f"{valid}\n{valid}", "extra text after the JSON ignored"),
        "prose_then_fence": (f"Here is my next step.\n```json\n{valid}\n```", "text before the JSON ignored"),
        "invalid_then_valid": (f"{invalid}\nSorry, corrected:\n{valid}", "1 earlier JSON object(s) skipped"),
    }
