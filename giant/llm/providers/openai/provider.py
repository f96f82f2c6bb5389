"""OpenAI through the Responses API, in the two protocols.

structured: the step comes back as JSON under a strict json_schema derived from the pydantic actions
(read by giant.llm.decode: strict output still sometimes carries chatter or a repeat after the object).
tools: the authors' protocol, function tools slide_zoom/note and the final answer as plain text;
every crop of a turn is returned, in order (paper_facts §1). Caching is OpenAI's automatic prefix
cache, steered per item with prompt_cache_key.
Flex processing (provider.service_tier=flex): the same request with service_tier "flex", sent and
asked again through giant.llm.providers.openai.flex; the reply's own service_tier says which tier billed it.
Cache retention (provider.prompt_cache_retention, giant.llm.caching.openai_retention): batch rounds
come back after in-memory entries are gone, so `auto` asks the models that take it for "24h".
Reasoning items: with store=false the server keeps nothing, so when reasoning is on the request
includes reasoning.encrypted_content and each reply's reasoning items are re-sent, unmodified, just
before the assistant items of their turn in later requests (OpenAI asks for this, above all around
function calls). They ride in the conversation as the turn's `Reasoning` parts, so the instance keeps
nothing per episode; audit records keep only the length of the encrypted content.
"""

from __future__ import annotations

import json
from typing import Any

import openai

from giant.llm.caching import no_breakpoints, openai_prefix, openai_retention
from giant.llm.decode import decode_step, decode_tool_call
from giant.llm.image_tokens import openai_high_detail
from giant.llm.providers.openai import OpenAISettings
from giant.llm.providers.openai.batch import OpenAIBatches
from giant.llm.providers.openai.flex import FLEX, send_flex, tier_of
from giant.llm.request_limits import OPENAI_LIMITS
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
from giant.llm.sdk_provider import SdkProvider, client_options, length_label
from giant.llm.types import (
    AnswerAction,
    AssistantMessage,
    CallContext,
    Conversation,
    ImagePart,
    ModelTurn,
    ParseError,
    Reasoning,
    RefusalError,
    Step,
    TransientError,
    Usage,
    UserMessage,
)

SCHEMA_NAME = "giant_step"
ENCRYPTED = "reasoning.encrypted_content"


class OpenAIProvider(SdkProvider[OpenAISettings]):
    name = "openai"
    image_formula = "openai_high_detail"
    request_limits = OPENAI_LIMITS  # the dry run checks a joint patch call against them
    image_tokens = staticmethod(openai_high_detail)
    cache_rule = staticmethod(openai_prefix)
    cache_breakpoints = staticmethod(no_breakpoints)  # its requests mark no breakpoint

    client: openai.AsyncOpenAI

    def _client(self, http_client: Any) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(api_key=self._key, **client_options(self.cfg, http_client))

    def _batch_api(self) -> OpenAIBatches:
        return OpenAIBatches(self.client)

    # ------------------------------------------------------------------ request

    def _content(self, message: UserMessage) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, ImagePart):
                url = f"data:{part.image.media_type};base64,{part.image.data_b64}"
                content.append({"type": "input_image", "image_url": url, "detail": self.cfg.image_detail})
            else:
                content.append({"type": "input_text", "text": part.text})
        return content

    def _assistant(self, message: AssistantMessage) -> list[dict[str, Any]]:
        if self.cfg.protocol == "structured":
            text = message.raw_text or "\n".join(json.dumps(step_to_data(s)) for s in message.steps)
            return [{"role": "assistant", "content": text}]
        items: list[dict[str, Any]] = []
        reasoning = message.steps[0].reasoning if message.steps else ""
        if reasoning and reasoning != TOOL_ONLY_REASONING and message.steps[0].call_id is not None:
            items.append({"role": "assistant", "content": reasoning})
        for step in message.steps:
            if step.call_id is None:  # the answer (or a plain-text reply)
                text = getattr(step.action, "text", None) or step.reasoning
                items.append({"role": "assistant", "content": text})
                continue
            tool = function_tools()[step.action.type]
            items.append(
                {
                    "type": "function_call",
                    "call_id": step.call_id,
                    "name": tool.name,
                    "arguments": tool.arguments(step.action),
                }
            )
        return items

    @staticmethod
    def _reasoning_items(message: AssistantMessage, sent: set[str]) -> list[dict[str, Any]]:
        """The turn's reasoning items as the API returned them; one already in this request is not
        sent twice (the API rejects a duplicate id)."""
        items = []
        for part in message.reasoning:
            if part.provider != "openai" or part.id in sent:
                continue
            sent.add(part.id or "")
            summary = [{"type": "summary_text", "text": text} for text in part.summary]
            items.append(
                {"type": "reasoning", "id": part.id, "summary": summary, "encrypted_content": part.signature}
            )
        return items

    def _input(self, conversation: Conversation) -> list[dict[str, Any]]:
        """Every function_call needs a function_call_output: a call the agent did not answer (a
        rejected crop, a corrective message instead) gets a short placeholder output."""
        items: list[dict[str, Any]] = []
        pending: list[str] = []
        sent: set[str] = set()
        for message in conversation.messages:
            if isinstance(message, AssistantMessage):
                items += self._reasoning_items(message, sent)
                items += self._assistant(message)
                tools_mode = self.cfg.protocol == "tools"
                pending = [s.call_id for s in message.steps if s.call_id is not None and tools_mode]
            elif message.in_reply_to is not None and message.in_reply_to in pending:
                output = self._content(message) or [{"type": "input_text", "text": "Done."}]
                items.append(
                    {"type": "function_call_output", "call_id": message.in_reply_to, "output": output}
                )
                pending.remove(message.in_reply_to)
            else:
                items += [
                    {"type": "function_call_output", "call_id": c, "output": "Received."} for c in pending
                ]
                pending = []
                items.append({"role": "user", "content": self._content(message)})
        return items

    def build_request(self, conversation: Conversation, ctx: CallContext) -> dict[str, Any]:
        cfg = self.cfg
        request: dict[str, Any] = {
            "model": cfg.model,
            "input": self._input(conversation),
            "store": False,
        }
        if conversation.system:
            request["instructions"] = conversation.system
        if cfg.prompt_caching:
            request["prompt_cache_key"] = ctx.item_key
        if cfg.service_tier == "flex":  # standard sends nothing: the project's default tier
            request["service_tier"] = FLEX
        kept = openai_retention(cfg.prompt_cache_retention, cfg.model, batch=cfg.batch)
        if kept is not None:  # batch bodies are these requests too (giant.llm.providers.openai.batch)
            request["prompt_cache_retention"] = kept
        if cfg.reasoning_effort:
            request["reasoning"] = {"effort": cfg.reasoning_effort}
            request["include"] = [ENCRYPTED]
        if cfg.max_tokens:
            request["max_output_tokens"] = cfg.max_tokens
        if cfg.temperature is not None:
            request["temperature"] = cfg.temperature
        if cfg.protocol == "structured":
            schema = step_schema(offered_actions(ctx))
            request["text"] = {
                "format": {"type": "json_schema", "name": SCHEMA_NAME, "strict": True, "schema": schema}
            }
        else:
            tools = offered_tools(ctx)
            if tools:
                request["tools"] = [
                    {
                        "type": "function",
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters(),
                        "strict": True,
                    }
                    for t in tools
                ]
                request["tool_choice"] = "auto"  # constant: see schema.offered_tools
                request["parallel_tool_calls"] = True
        return request

    def _recorded(self, request: dict[str, Any]) -> dict[str, Any]:
        """Encrypted reasoning is opaque and large, and every later request repeats it: the audit
        record keeps its length only."""
        if not any(item.get("type") == "reasoning" for item in request["input"]):
            return request
        return {**request, "input": [_shrunk(item) for item in request["input"]]}

    # ------------------------------------------------------------------ call

    async def _create(self, request: dict[str, Any]) -> Any:
        return await self.client.responses.create(**request)

    async def _send(self, request: dict[str, Any]) -> Any:
        if request.get("service_tier") != FLEX:
            return await self._create(request)
        return await send_flex(
            self._create,
            request,
            model=self.model,
            retries=self.cfg.flex_retries,
            fallback=self.cfg.flex_fallback,
            secret=self._key or None,
        )

    def _tokens(self, response: Any) -> Usage:
        raw = response.usage
        return Usage(
            input_tokens=count(raw, "input_tokens"),
            output_tokens=count(raw, "output_tokens"),
            reasoning_tokens=count(raw, "output_tokens_details", "reasoning_tokens"),
            cached_input_tokens=count(raw, "input_tokens_details", "cached_tokens"),
            cache_write_tokens=count(raw, "input_tokens_details", "cache_write_tokens"),
            tier=tier_of(response),
        )

    def _parse(self, response: Any, usage: Usage) -> ModelTurn:
        reasoning = self._reasoning(response)
        texts, refusals, calls = [], [], []
        for item in response.output or []:
            if item.type == "message":
                for part in item.content or []:
                    if part.type == "output_text":
                        texts.append(part.text)
                    elif part.type == "refusal":
                        refusals.append(part.refusal)
            elif item.type == "function_call":
                calls.append(item)
        text = "".join(texts)
        raw_text = "\n".join([text, *(f"{c.name}({c.arguments})" for c in calls)]).strip()
        if response.status == "failed":
            error = getattr(response.error, "message", "") if response.error else ""
            raise TransientError(f"openai: response failed: {error}", raw_text=raw_text)
        if response.status == "incomplete":
            reason = getattr(response.incomplete_details, "reason", None)
            raise ParseError(f"openai: reply truncated (incomplete: {reason})", raw_text=raw_text)
        if refusals and not text and not calls:
            raise RefusalError("openai: the model refused", raw_text="\n".join(refusals))
        note: str | None = None
        if self.cfg.protocol == "structured":
            decoded = decode_step(text, raw_text)
            steps, note = [decoded.value], decoded.note
        elif calls:
            said = text.strip() or TOOL_ONLY_REASONING
            steps, notes = [], []
            for c in calls:
                action = decode_tool_call(tool_for(c.name, raw_text), c.arguments, raw_text)
                steps.append(Step(reasoning=said, action=action.value, call_id=c.call_id))
                notes += [f"{c.name}: {action.note}"] if action.note else []
            note = "; ".join(notes) or None
        elif text.strip():
            steps = [Step(reasoning=text.strip(), action=AnswerAction(text=text.strip()))]
        else:
            raise ParseError("openai: empty reply (no text and no tool call)", raw_text=raw_text)
        return ModelTurn(steps=steps, usage=usage, raw_text=raw_text, decode_note=note, reasoning=reasoning)

    def _reasoning(self, response: Any) -> list[Reasoning]:
        """The reply's reasoning items for the conversation; on the response object (which the audit
        record saves next) the encrypted content is shrunk to its length."""
        if not self.cfg.reasoning_effort:
            return []
        parts = []
        for item in response.output or []:
            if item.type != "reasoning" or not item.encrypted_content:
                continue  # with store=false an id alone is refused as unknown
            summary = [s.text for s in item.summary or []]
            parts.append(
                Reasoning(provider=self.name, id=item.id, summary=summary, signature=item.encrypted_content)
            )
            item.encrypted_content = length_label("encrypted_content", item.encrypted_content)
        return parts


def _shrunk(item: dict[str, Any]) -> dict[str, Any]:
    if item.get("type") != "reasoning" or not item.get("encrypted_content"):
        return item
    return {**item, "encrypted_content": length_label("encrypted_content", item["encrypted_content"])}
