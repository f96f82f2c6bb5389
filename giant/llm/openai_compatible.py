"""Chat Completions against any OpenAI-compatible base_url (vLLM, Ollama, LM Studio, llama.cpp server).

For open-weight vision models on a user's own GPU. Structured protocol only: the step schema goes in
response_format when the server enforces JSON schemas (`provider.json_schema=true`); otherwise the
schema is stated in the system prompt. Either way the reply goes through the decoder every provider
shares (giant.llm.decode: the first JSON object in the text that is a valid step).
"""

from __future__ import annotations

import json
import re
from typing import Any

import openai

from giant.llm.caching import no_breakpoints, no_caching
from giant.llm.config import OpenAICompatibleSettings
from giant.llm.decode import decode_step
from giant.llm.image_tokens import openai_high_detail
from giant.llm.ledger import Ledger
from giant.llm.schema import offered_actions, step_schema, step_to_data
from giant.llm.sdk_errors import cause_of, redact
from giant.llm.sdk_provider import SdkProvider, client_options
from giant.llm.types import (
    AssistantMessage,
    CallContext,
    Conversation,
    FatalProviderError,
    ImagePart,
    ModelTurn,
    ParseError,
    RefusalError,
    Usage,
    UserMessage,
)

SCHEMA_NAME = "giant_step"
NO_KEY = "not-needed"  # the SDK insists on a key string; local servers ignore it
# The context a server states in its 400 (vLLM old and new wordings, llama.cpp's n_ctx field).
_CONTEXT_SIZE = re.compile(
    r"maximum context length is (\d+)|maximum model length of (\d+)|n_ctx['\"]?\s*[:=]\s*(\d+)", re.I
)


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
        # The model's context: the setting, or what the preflight read from the server (None: unknown).
        self.max_model_len: int | None = cfg.max_model_len

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
        try:
            return await self.client.chat.completions.create(**request)
        except openai.BadRequestError as exc:
            if cause_of(exc) != "context":
                raise
            raise FatalProviderError(self.context_reason(exc), cause="context") from None

    def context_reason(self, exc: openai.BadRequestError) -> str:
        """A request larger than the model's window, said as what to change: the limit (from the
        server's words, else the preflight's max_model_len) and the knobs that shrink a request."""
        text = redact(str(getattr(exc, "body", None) or exc), self._key or None).replace("\n", " ")
        found = _CONTEXT_SIZE.search(text)
        limit = next((int(g) for g in found.groups() if g), None) if found else self.max_model_len
        window = f"max_model_len {limit}" if limit else "max_model_len unknown"
        return (
            f"openai_compatible: the request exceeds the model's context ({window}; the server: "
            f"{text[:200]}); lower agent.max_images_in_context or agent.crop_size (the dry run's "
            "context fit names values that fit), or serve the model with a larger --max-model-len"
        )

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
