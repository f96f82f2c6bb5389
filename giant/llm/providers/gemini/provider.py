"""Google Gemini through the google-genai SDK's generateContent, in the two protocols.

generateContent is stateless: every request carries the whole conversation, so the ledger key and
the audit record hold the full request and a resumed episode replays from the ledger alone. (The
Interactions API would keep the conversation on Google's servers behind a previous-interaction id:
a request would then no longer say what the model saw, and a ledger key could not be computed from
it.) Implicit caching is automatic on Gemini 2.5+: a request whose prefix repeats an earlier one's is
billed `cached_content_token_count` tokens at the cached rate; the requests of an episode keep their
prefix byte-identical (the tools and schema never change within an item, earlier turns are re-sent
as they were), as on the OpenAI path.

structured: the step as JSON under `response_json_schema`, derived from the pydantic actions
(giant.llm.schema) like the other providers' schemas. tools: the authors' slide_zoom/note tools as
function declarations, every function call of a turn answered by a function response.
Thought signatures: Gemini 3+ returns an opaque `thought_signature` on parts of a reply and rejects
(400) a later request whose history drops one. Each reply's parts therefore ride in the
conversation as the turn's `Reasoning` (id: the part's kind, thinking: its text or function call as
JSON, signature: the signature, base64) and the model turn is re-sent from them exactly as it came;
the instance keeps nothing per episode, and a replayed episode re-sends the same signatures. Audit
records keep only a signature's length.
Flex (provider.service_tier=flex): the request's `service_tier`, shed calls retried then sent at the
standard tier (giant.llm.providers.gemini.errors); the reply's usage says which tier billed it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from google import genai
from google.genai import types

from giant.llm.caching import CacheSplit, Request, _longest_shared, no_breakpoints
from giant.llm.decode import decode_step, decode_tool_call
from giant.llm.providers.gemini import GeminiSettings
from giant.llm.providers.gemini.batch import GeminiBatches
from giant.llm.providers.gemini.errors import sdk_call, send_flex
from giant.llm.runtime import count
from giant.llm.schema import (
    TOOL_ONLY_REASONING,
    function_tools,
    offered_actions,
    offered_tools,
    step_schema,
    step_to_data,
    tool_for,
)
from giant.llm.sdk_errors import unreadable_reply
from giant.llm.sdk_provider import SdkProvider, length_label
from giant.llm.types import (
    AnswerAction,
    AssistantMessage,
    CallContext,
    Conversation,
    FatalProviderError,
    ImagePart,
    ModelTurn,
    ParseError,
    Reasoning,
    Step,
    Tier,
    Usage,
    UserMessage,
)

FLEX = "flex"
TIER_HEADER = "x-giant-service-tier"  # the tier a reply was sent at (see _billed)
TEXT, THOUGHT, CALL = "text", "thought", "call"  # a kept part's kind (Reasoning.id)
# Finish reasons that are the model's or Google's refusal to answer this item: a model failure with
# its reason, never asked again (the same prompt would be blocked the same way).
BLOCKED = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE"}
    | {"IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION"}
)
# Gemini 3 image tokens per media_resolution level (Google's media resolution guide); the size of the
# image does not change them. Gemini 2.5 tiles instead (258 per 768 px tile): its count comes back
# in the reply's usage, the dry run estimates with the Gemini 3 rule.
IMAGE_TOKENS_HIGH = 1120
GEMINI_MIN_PREFIX = 1024  # implicit caching starts at 1024 tokens (Flash); Pro models need 4096
GEMINI_PRO_MIN_PREFIX = 4096


def gemini_image(width: int, height: int) -> int:
    """Tokens of one image part at media_resolution high (the shipped setting) on Gemini 3."""
    return IMAGE_TOKENS_HIGH


def gemini_prefix(requests: Sequence[Request], enabled: bool = True, model: str = "") -> list[CacheSplit]:
    """Gemini's implicit cache: the longest prefix shared with an earlier request once it reaches the
    model's minimum, billed at the cached rate with no write surcharge."""
    minimum = GEMINI_PRO_MIN_PREFIX if "pro" in model else GEMINI_MIN_PREFIX
    return [CacheSplit(shared if shared >= minimum else 0, 0) for shared in _longest_shared(requests)]


class GeminiProvider(SdkProvider[GeminiSettings]):
    name = "gemini"
    image_formula = "gemini_media_resolution"
    image_tokens = staticmethod(gemini_image)
    cache_rule = staticmethod(gemini_prefix)
    cache_breakpoints = staticmethod(no_breakpoints)  # implicit caching: no marks

    client: genai.Client

    def _client(self, http_client: Any) -> genai.Client:
        options = types.HttpOptions(
            base_url=self.cfg.base_url,
            timeout=int(self.cfg.client_timeout_s() * 1000),  # milliseconds
            retry_options=types.HttpRetryOptions(attempts=1),  # giant.llm.retry is the one layer
            httpx_async_client=http_client,
        )
        return genai.Client(api_key=self._key or None, http_options=options)

    def _batch_api(self) -> GeminiBatches:
        return GeminiBatches(self.client, self.model, secret=self._key or None)

    # ------------------------------------------------------------------ request

    def _parts(self, message: UserMessage) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        level = self.cfg.media_resolution
        for part in message.parts:
            if isinstance(part, ImagePart):
                image: dict[str, Any] = {
                    "inline_data": {"mime_type": part.image.media_type, "data": part.image.data_b64}
                }
                if level is not None:
                    image["media_resolution"] = {"level": f"MEDIA_RESOLUTION_{level.upper()}"}
                parts.append(image)
            elif part.text:
                parts.append({"text": part.text})
        return parts

    def _model_parts(self, message: AssistantMessage) -> list[dict[str, Any]]:
        """The model's turn as it came (with its thought signatures), else rebuilt from the steps
        (a turn of another provider, or a scripted history)."""
        kept = [part for part in message.reasoning if part.provider == self.name]
        if kept:
            return [_wire_part(part) for part in kept]
        if self.cfg.protocol == "structured":
            text = message.raw_text or "\n".join(json.dumps(step_to_data(s)) for s in message.steps)
            return [{"text": text}]
        parts: list[dict[str, Any]] = []
        for step in message.steps:
            if step.call_id is None:
                parts.append({"text": getattr(step.action, "text", None) or step.reasoning})
                continue
            tool = function_tools()[step.action.type]
            args = {p: getattr(step.action, f) for p, f in tool.params.items()}
            parts.append({"function_call": {"id": step.call_id, "name": tool.name, "args": args}})
        return parts

    def _contents(self, conversation: Conversation) -> list[dict[str, Any]]:
        """Every function call is answered by a function response in the next user turn (a call the
        agent did not answer, a rejected crop, gets a short placeholder)."""
        contents: list[dict[str, Any]] = []
        pending: dict[str, dict[str, Any]] = {}  # call_id -> the function_response it needs
        for message in conversation.messages:
            if isinstance(message, AssistantMessage):
                parts = self._model_parts(message)
                contents.append({"role": "model", "parts": parts})
                pending = _calls(message, parts) if self.cfg.protocol == "tools" else {}
                continue
            parts = []
            if message.in_reply_to in pending:
                parts.append(_answered(pending.pop(message.in_reply_to), "The image of this region follows."))
            parts += [_answered(call, "Received.") for call in pending.values()]
            pending = {}
            parts += self._parts(message)
            if contents and contents[-1]["role"] == "user":
                contents[-1]["parts"] += parts
            else:
                contents.append({"role": "user", "parts": parts})
        return contents

    def build_request(self, conversation: Conversation, ctx: CallContext) -> dict[str, Any]:
        cfg = self.cfg
        config: dict[str, Any] = {}
        if conversation.system:
            config["system_instruction"] = conversation.system
        if cfg.protocol == "structured":
            config["response_mime_type"] = "application/json"
            config["response_json_schema"] = step_schema(offered_actions(ctx))
        else:
            tools = offered_tools(ctx)
            if tools:
                declarations = [
                    {"name": t.name, "description": t.description, "parameters_json_schema": t.parameters()}
                    for t in tools
                ]
                config["tools"] = [{"function_declarations": declarations}]
                config["tool_config"] = {"function_calling_config": {"mode": "AUTO"}}  # constant: caching
        if cfg.thinking_level is not None:
            config["thinking_config"] = {"thinking_level": cfg.thinking_level}
        elif cfg.thinking_budget is not None:
            config["thinking_config"] = {"thinking_budget": cfg.thinking_budget}
        if cfg.max_tokens:
            config["max_output_tokens"] = cfg.max_tokens
        if cfg.temperature is not None:
            config["temperature"] = cfg.temperature
        request: dict[str, Any] = {
            "model": cfg.model,
            "contents": self._contents(conversation),
            "config": config,
        }
        if cfg.service_tier == "flex" and not cfg.batch:
            # top level, not in config: the ledger key leaves the tier out (a flex reply is the
            # standard one, billed at half), and _send moves it into the config.
            request["service_tier"] = FLEX
        return request

    def _recorded(self, request: dict[str, Any]) -> dict[str, Any]:
        """Thought signatures are opaque and every later request repeats them: the record keeps
        their length."""
        contents = [
            {**content, "parts": [_shrunk(part) for part in content["parts"]]}
            for content in request["contents"]
        ]
        return {**request, "contents": contents}

    # ------------------------------------------------------------------ call

    async def _create(self, request: dict[str, Any], tier: str | None) -> Any:
        config: types.GenerateContentConfigDict = {**request["config"]}
        if tier == FLEX:
            config["service_tier"] = types.ServiceTier.FLEX
        return await self.client.aio.models.generate_content(
            model=request["model"], contents=request["contents"], config=config
        )

    async def _send(self, request: dict[str, Any]) -> Any:
        secret = self._key or None
        if request.get("service_tier") != FLEX:
            response = await sdk_call(self._create(request, None), secret=secret)
            return _billed(_not_empty(response), "standard")
        response, tier = await send_flex(
            lambda tier: self._create(request, tier),
            model=self.model,
            retries=self.cfg.flex_retries,
            fallback=self.cfg.flex_fallback,
            secret=secret,
        )
        return _billed(_not_empty(response), tier)

    def _tokens(self, response: Any) -> Usage:
        raw = rebuilt(response).usage_metadata
        thoughts = count(raw, "thoughts_token_count")
        return Usage(
            # promptTokenCount includes the cached tokens; tool-use prompt tokens are input too
            input_tokens=count(raw, "prompt_token_count") + count(raw, "tool_use_prompt_token_count"),
            cached_input_tokens=count(raw, "cached_content_token_count"),
            output_tokens=count(raw, "candidates_token_count") + thoughts,  # thinking is billed as output
            reasoning_tokens=thoughts,
            tier=tier_of(response),
        )

    def _usage(self, response: Any, latency: float) -> Usage:
        usage = self._tokens(response)
        if self.batches is not None:
            usage.tier = "batch"
        usage.request_id = getattr(response, "response_id", None)
        usage.latency_s = latency
        return self.runtime.priced(usage)

    def _parse(self, response: Any, usage: Usage) -> ModelTurn:
        reply = rebuilt(response)
        feedback = reply.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            why = _tier_name(feedback.block_reason)
            raise FatalProviderError(
                f"gemini: the prompt was blocked ({why}): {feedback.block_reason_message or ''}"
            )
        if not reply.candidates:
            raise ParseError("gemini: reply without a candidate")
        candidate = reply.candidates[0]
        parts = (candidate.content.parts if candidate.content else None) or []
        kept = [_kept(part) for part in parts]
        texts = [part.text for part in parts if part.text and not part.thought]
        calls = [part.function_call for part in parts if part.function_call is not None]
        text = "".join(texts).strip()
        raw_text = "\n".join([text, *(f"{c.name}({json.dumps(c.args or {})})" for c in calls)]).strip()
        reason = _tier_name(candidate.finish_reason)
        if reason in BLOCKED:
            message = candidate.finish_message or ""
            raise FatalProviderError(
                f"gemini: the reply was blocked ({reason}) {message}".strip(), raw_text=raw_text
            )
        if reason == "MAX_TOKENS":
            raise ParseError("gemini: reply truncated (MAX_TOKENS)", raw_text=raw_text)
        if reason == "MALFORMED_FUNCTION_CALL":
            raise ParseError(
                f"gemini: malformed function call {candidate.finish_message or ''}", raw_text=raw_text
            )
        for part in parts:  # the audit record's copy keeps a signature's length only (a bytes field)
            if part.thought_signature:
                label = length_label("thought_signature", _b64(part.thought_signature))
                part.thought_signature, part.part_metadata = None, {"thought_signature": label}
        note: str | None = None
        if self.cfg.protocol == "structured":
            decoded = decode_step(text, raw_text)
            steps, note = [decoded.value], decoded.note
        elif calls:
            said = text or TOOL_ONLY_REASONING
            steps, notes = [], []
            for n, call in enumerate(calls):
                name = call.name or ""
                action = decode_tool_call(tool_for(name, raw_text), call.args or {}, raw_text)
                call_id = call.id or f"{reply.response_id or 'gemini'}-{n}"
                steps.append(Step(reasoning=said, action=action.value, call_id=call_id))
                notes += [f"{name}: {action.note}"] if action.note else []
            note = "; ".join(notes) or None
        elif text:
            steps = [Step(reasoning=text, action=AnswerAction(text=text))]
        else:
            raise ParseError("gemini: empty reply (no text and no function call)", raw_text=raw_text)
        return ModelTurn(steps=steps, usage=usage, raw_text=raw_text, decode_note=note, reasoning=kept)


# ----------------------------------------------------------------------------- parts


def _not_empty(response: Any) -> Any:
    """The reply, unless it says nothing at all (no candidate, no prompt feedback, no usage): what the
    SDK makes of a 200 with an empty body, a server fault retried as one (never kept in the ledger)."""
    if isinstance(response, types.GenerateContentResponse) and not (
        response.candidates or response.prompt_feedback or response.usage_metadata
    ):
        raise unreadable_reply("gemini", "an empty reply (no candidate, no usage)")
    return response


def rebuilt(response: Any) -> types.GenerateContentResponse:
    """The reply as the SDK's object: a ledger replay rebuilds it without validation (nested dicts,
    signatures as base64 text), so such a reply is validated again from its JSON."""
    if (
        isinstance(response, types.GenerateContentResponse)
        and not any(isinstance(c, dict) for c in response.candidates or [])
        and not isinstance(response.usage_metadata, dict)
    ):
        return response
    fields = {name: getattr(response, name, None) for name in types.GenerateContentResponse.model_fields}
    data = {
        name: value for name, value in fields.items() if value is not None and name != "sdk_http_response"
    }
    return types.GenerateContentResponse.model_validate_json(json.dumps(data, default=str))


def _b64(signature: bytes | str) -> str:
    return signature if isinstance(signature, str) else base64.b64encode(signature).decode()


def _kept(part: types.Part) -> Reasoning:
    """One reply part as the conversation keeps it, to be sent back unchanged."""
    signature = _b64(part.thought_signature) if part.thought_signature else ""
    if part.function_call is not None:
        call = part.function_call.model_dump(mode="json", exclude_none=True)
        return Reasoning(provider="gemini", id=CALL, thinking=json.dumps(call), signature=signature)
    kind = THOUGHT if part.thought else TEXT
    return Reasoning(provider="gemini", id=kind, thinking=part.text or "", signature=signature)


def _wire_part(part: Reasoning) -> dict[str, Any]:
    out: dict[str, Any]
    if part.id == CALL:
        out = {"function_call": json.loads(part.thinking)}
    else:
        out = {"text": part.thinking}
        if part.id == THOUGHT:
            out["thought"] = True
    if part.signature:
        out["thought_signature"] = part.signature
    return out


def _shrunk(part: dict[str, Any]) -> dict[str, Any]:
    if not part.get("thought_signature"):
        return part
    return {**part, "thought_signature": length_label("thought_signature", part["thought_signature"])}


def _calls(message: AssistantMessage, parts: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The function calls of a model turn by the step's call_id: the function_response each needs
    (with the call's own id when the API gave it one)."""
    wire = [part["function_call"] for part in parts if "function_call" in part]
    steps = [step for step in message.steps if step.call_id is not None]
    pending = {}
    for step, call in zip(steps, wire, strict=False):
        response: dict[str, Any] = {"name": call.get("name", "")}
        if call.get("id"):
            response["id"] = call["id"]
        pending[step.call_id or ""] = response
    return pending


def _answered(call: dict[str, Any], output: str) -> dict[str, Any]:
    return {"function_response": {**call, "response": {"output": output}}}


def _tier_name(value: Any) -> str:
    """An SDK enum or its wire string, as the wire string ("SAFETY", "flex")."""
    return str(getattr(value, "value", value) or "")


def _billed(response: Any, sent: str) -> Any:
    """The reply marked with the tier it was sent at (the SDK's generateContent reply says nothing of
    its tier): a header of the reply's recorded HTTP response, so the ledger keeps it too."""
    http = response.sdk_http_response
    if http is None:
        http = response.sdk_http_response = types.HttpResponse(headers={})
    http.headers = {**(http.headers or {}), TIER_HEADER: sent}
    return response


def tier_of(response: Any) -> Tier:
    http = getattr(response, "sdk_http_response", None)
    headers = getattr(http, "headers", None) or {}
    return "flex" if headers.get(TIER_HEADER) == FLEX else "standard"
