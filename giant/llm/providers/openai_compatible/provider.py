"""Chat Completions against any OpenAI-compatible base_url (vLLM, Ollama, LM Studio, llama.cpp server).

For open-weight vision models on a user's own GPU. Structured protocol only. The step schema goes
where the server takes it (`provider.json_schema`): `response_format` (OpenAI's json_schema shape:
vLLM, Ollama >= 0.5, llama.cpp server), `guided_json` (vLLM before 0.12, an extra body field), or
`none` (stated in the system prompt). Either way the reply goes through the decoder every provider
shares (giant.llm.decode: the first JSON object in the text that is a valid step).

Servers as they are: a reasoning model served without a reasoning parser writes `<think>...</think>`
before its JSON; the block is taken out before decoding (giant.llm.decode.split_thinking) and kept as
the turn's reasoning, as is the `reasoning_content` (or `reasoning`) field vLLM's `--reasoning-parser`
puts beside `content`. Neither is sent back in later requests (the models' chat templates drop it).
When the model's context is known (`provider.max_model_len`, or the preflight's reading of the
server), `provider.max_tokens` is capped at what the prompt leaves of it (vLLM refuses a request whose
prompt plus max_tokens exceed max_model_len), and a prompt that leaves less than MIN_REPLY_TOKENS
ends the item as a context error before anything is sent.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

import openai

from giant.llm.caching import no_breakpoints, no_caching
from giant.llm.decode import decode_step, split_thinking
from giant.llm.image_tokens import FAMILIES, family_of, openai_high_detail
from giant.llm.ledger import Ledger
from giant.llm.providers.openai_compatible import OpenAICompatibleSettings
from giant.llm.runtime import estimate_tokens
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
    Reasoning,
    RefusalError,
    Usage,
    UserMessage,
)

SCHEMA_NAME = "giant_step"
EXTRA_BODY = ("guided_json",)  # wire fields the SDK does not know: sent through its extra_body
MIN_REPLY_TOKENS = 256  # a prompt that leaves less of the context than this is not sent
REASONING_FIELDS = ("reasoning_content", "reasoning")  # vLLM's reasoning parser (renamed in 0.11)
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

    client: openai.AsyncOpenAI

    def __init__(
        self, cfg: OpenAICompatibleSettings, *, http_client: Any = None, ledger: Ledger | None = None
    ) -> None:
        super().__init__(cfg, http_client=http_client, ledger=ledger)
        # The model's context: the setting, or what the preflight read from the server (None: unknown).
        self.max_model_len: int | None = cfg.max_model_len
        # The image-token rule of the model's family, for the prompt estimate behind max_tokens.
        self.image_rule = FAMILIES[family_of(cfg.model, cfg.image_tokens)]

    def _client(self, http_client: Any) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(api_key=self._key or NO_KEY, **client_options(self.cfg, http_client))

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

    @staticmethod
    def _said(message: AssistantMessage) -> str:
        """An earlier reply as sent back: without its think block (the chat templates of reasoning
        models drop it from the history, and it would spend the context), else its steps as JSON."""
        text = message.raw_text
        with contextlib.suppress(ParseError):  # an unclosed block: no step came of it, sent as it was
            thought = split_thinking(text)
            text = text if thought.thinking is None else thought.text.strip()
        return text or "\n".join(json.dumps(step_to_data(s)) for s in message.steps)

    def prompt_tokens(self, conversation: Conversation, extra_text: str = "") -> int:
        """The prompt's estimated size (giant.llm.runtime.estimate_tokens with the model family's image
        rule), earlier replies counted as they are sent back."""
        sent = [
            m.model_copy(update={"raw_text": self._said(m)}) if isinstance(m, AssistantMessage) else m
            for m in conversation.messages
        ]
        shown = conversation.model_copy(update={"messages": sent})
        return estimate_tokens(shown, self.image_rule) + len(extra_text) // 4

    def reply_room(self, conversation: Conversation, extra_text: str = "") -> int | None:
        """What the prompt leaves of the model's context for the reply; None: the context is unknown.
        Less than the floor (MIN_REPLY_TOKENS, or a smaller provider.max_tokens) is the context error
        the server's 400 would give, raised before the call is made."""
        if not self.max_model_len:
            return None
        prompt = self.prompt_tokens(conversation, extra_text)
        room = self.max_model_len - prompt
        floor = min(MIN_REPLY_TOKENS, self.cfg.max_tokens or MIN_REPLY_TOKENS)
        if room < floor:
            raise FatalProviderError(
                self.context_line(
                    f"estimated before sending: a prompt of about {prompt:,} tokens leaves {max(room, 0):,} "
                    f"for the reply, below {floor}",
                    self.max_model_len,
                ),
                cause="context",
            )
        return room

    def build_request(self, conversation: Conversation, ctx: CallContext) -> dict[str, Any]:
        schema = step_schema(offered_actions(ctx))
        system = conversation.system or ""
        stated = ""
        if self.cfg.json_schema == "none":
            stated = (
                f"\n\nReply with exactly one JSON object that matches this JSON schema:\n{json.dumps(schema)}"
            )
            system += stated
        messages: list[dict[str, Any]] = (
            [{"role": "system", "content": system.strip()}] if system.strip() else []
        )
        for message in conversation.messages:
            if isinstance(message, AssistantMessage):
                messages.append({"role": "assistant", "content": self._said(message)})
            else:
                messages.append(self._user(message))
        request: dict[str, Any] = {"model": self.cfg.model, "messages": messages}
        if self.cfg.json_schema == "response_format":
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": schema},
            }
        elif self.cfg.json_schema == "guided_json":
            request["guided_json"] = schema  # a top-level body field, as vLLM reads it
        room = self.reply_room(conversation, stated)
        if self.cfg.max_tokens:
            request["max_tokens"] = self.cfg.max_tokens if room is None else min(self.cfg.max_tokens, room)
        if self.cfg.temperature is not None:
            request["temperature"] = self.cfg.temperature
        return request

    async def _send(self, request: dict[str, Any]) -> Any:
        body: dict[str, Any] = {key: value for key, value in request.items() if key not in EXTRA_BODY}
        extra = {key: request[key] for key in EXTRA_BODY if key in request}
        if extra:
            body["extra_body"] = extra
        try:
            return await self.client.chat.completions.create(**body)
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
        return self.context_line(f"the server: {text[:200]}", limit)

    @staticmethod
    def context_line(said: str, limit: int | None) -> str:
        """The one reason a too-large request gives, whoever found it (`said`: the server's words or
        the estimate)."""
        window = f"max_model_len {limit}" if limit else "max_model_len unknown"
        return (
            f"openai_compatible: the request exceeds the model's context ({window}; {said}); lower "
            "agent.max_images_in_context or agent.crop_size (the dry run's context fit names values "
            "that fit), or serve the model with a larger --max-model-len"
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
        try:
            thought = split_thinking(text)
        except ParseError as exc:
            cut = " (finish_reason=length)" if choice.finish_reason == "length" else ""
            raise ParseError(f"openai_compatible: {exc}{cut}", raw_text=text) from None
        if choice.finish_reason == "length":
            raise ParseError("openai_compatible: reply truncated (finish_reason=length)", raw_text=text)
        reasoning = [
            Reasoning(provider=self.name, thinking=said)
            for said in (server_reasoning(choice.message), thought.thinking)
            if said
        ]
        decoded = decode_step(thought.text, raw_text=text)
        note = decoded.note
        if thought.thinking is not None:
            kept = (
                f"<think> block taken out before decoding ({len(thought.thinking)} chars, kept as reasoning)"
            )
            note = f"{kept}; {note}" if note else kept
        return ModelTurn(
            steps=[decoded.value], usage=usage, raw_text=text, decode_note=note, reasoning=reasoning
        )


def server_reasoning(message: Any) -> str | None:
    """The reasoning a server's reasoning parser put beside `content` (vLLM `--reasoning-parser`:
    `reasoning_content`, `reasoning` from 0.11; llama.cpp: `reasoning_content`), read from the SDK
    object's extra fields, which it keeps but does not declare."""
    extra = getattr(message, "model_extra", None) or {}
    for field in REASONING_FIELDS:
        said = extra.get(field) or getattr(message, field, None)
        if isinstance(said, str) and said.strip():
            return said.strip()
    return None
