"""Chat Completions against any OpenAI-compatible base_url (vLLM, Ollama, LM Studio, llama.cpp server).

For open-weight vision models on a user's own GPU. Structured protocol only: the step schema goes in
response_format when the server enforces JSON schemas (`provider.json_schema=true`); otherwise the
schema is stated in the system prompt. Either way the reply goes through the decoder every provider
shares (giant.llm.decode: the first JSON object in the text that is a valid step).
"""

from __future__ import annotations

import json
from typing import Any

import openai

from giant.llm.caching import no_breakpoints, no_caching
from giant.llm.config import OpenAICompatibleSettings
from giant.llm.decode import decode_step
from giant.llm.image_tokens import openai_high_detail
from giant.llm.ledger import Ledger
from giant.llm.schema import offered_actions, step_schema, step_to_data
from giant.llm.sdk_provider import SdkProvider, client_options
from giant.llm.types import (
    AssistantMessage,
    CallContext,
    Conversation,
    ImagePart,
    ModelTurn,
    ParseError,
    RefusalError,
    Usage,
    UserMessage,
)

SCHEMA_NAME = "giant_step"
NO_KEY = "not-needed"  # the SDK insists on a key string; local servers ignore it


class OpenAICompatibleProvider(SdkProvider[OpenAICompatibleSettings]):
    name = "openai_compatible"
    image_formula = "openai_high_detail"  # Chat Completions image_url with a detail level
    image_tokens = staticmethod(openai_high_detail)
    cache_rule = staticmethod(no_caching)  # billing of cached input unknown: counted as plain input
    cache_breakpoints = staticmethod(no_breakpoints)  # its requests mark no breakpoint

    def __init__(
        self, cfg: OpenAICompatibleSettings, *, http_client: Any = None, ledger: Ledger | None = None
    ) -> None:
        super().__init__(cfg, ledger=ledger)
        self.client = openai.AsyncOpenAI(api_key=self._key or NO_KEY, **client_options(cfg, http_client))

    def __repr__(self) -> str:
        return f"OpenAICompatibleProvider(model={self.model!r}, base_url={self.cfg.base_url!r})"

    def _user(self, message: UserMessage) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, ImagePart):
                url = f"data:{part.image.media_type};base64,{part.image.data_b64}"
                content.append(
                    {"type": "image_url", "image_url": {"url": url, "detail": self.cfg.image_detail}}
                )
            else:
                content.append({"type": "text", "text": part.text})
        return {"role": "user", "content": content}

    def build_request(self, conversation: Conversation, ctx: CallContext) -> dict[str, Any]:
        schema = step_schema(offered_actions(ctx))
        system = conversation.system or ""
        if not self.cfg.json_schema:
            system += (
                f"\n\nReply with exactly one JSON object that matches this JSON schema:\n{json.dumps(schema)}"
            )
        messages: list[dict[str, Any]] = (
            [{"role": "system", "content": system.strip()}] if system.strip() else []
        )
        for message in conversation.messages:
            if isinstance(message, AssistantMessage):
                text = message.raw_text or "\n".join(json.dumps(step_to_data(s)) for s in message.steps)
                messages.append({"role": "assistant", "content": text})
            else:
                messages.append(self._user(message))
        request: dict[str, Any] = {"model": self.cfg.model, "messages": messages}
        if self.cfg.json_schema:
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": schema},
            }
        if self.cfg.max_tokens:
            request["max_tokens"] = self.cfg.max_tokens
        if self.cfg.temperature is not None:
            request["temperature"] = self.cfg.temperature
        return request

    async def _send(self, request: dict[str, Any]) -> Any:
        return await self.client.chat.completions.create(**request)

    def _tokens(self, response: Any) -> Usage:
        usage = Usage()
        raw = response.usage
        if raw is not None:
            usage.input_tokens = raw.prompt_tokens or 0
            usage.output_tokens = raw.completion_tokens or 0
            prompt_details = getattr(raw, "prompt_tokens_details", None)
            usage.cached_input_tokens = (
                (getattr(prompt_details, "cached_tokens", 0) or 0) if prompt_details else 0
            )
            out_details = getattr(raw, "completion_tokens_details", None)
            usage.reasoning_tokens = (getattr(out_details, "reasoning_tokens", 0) or 0) if out_details else 0
        return usage

    def _parse(self, response: Any, usage: Usage) -> ModelTurn:
        if not response.choices:
            raise ParseError("openai_compatible: the server returned no choices")
        choice = response.choices[0]
        text = choice.message.content or ""
        refusal = getattr(choice.message, "refusal", None)
        if refusal and not text:
            raise RefusalError("openai_compatible: the model refused", raw_text=refusal)
        if choice.finish_reason == "length":
            raise ParseError("openai_compatible: reply truncated (finish_reason=length)", raw_text=text)
        decoded = decode_step(text)
        return ModelTurn(steps=[decoded.value], usage=usage, raw_text=text, decode_note=decoded.note)
