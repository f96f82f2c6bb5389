"""Anthropic through the Messages API, in the two protocols.

structured: one tool whose input_schema is the step schema. It is forced (tool_choice) when extended
thinking is off; the API refuses forced tools with thinking on, so then tool_choice is auto and a
text reply is read as a JSON step, or else as the answer.
tools: the authors' protocol, slide_zoom/note tools and the answer as text; only the FIRST tool call
of a turn is executed (paper_facts §1).
Prompt caching: the tools, tool_choice, thinking settings and system prompt are the same at every
call of an item (a demanded answer is asked for in the message, schema.offered_actions), so the
prefix only grows. Where the cache_control breakpoints go (at most 4) is `cache_breakpoints`; in
batch mode they carry `provider.cache_ttl` (a 5-minute entry is gone before the next round).
Thinking blocks and their signatures must be re-sent unmodified before the tool_use they led to: they
ride in the conversation as the turn's `Reasoning` parts (the instance keeps nothing per episode);
audit records keep only the length of a signature.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import anthropic

from giant.llm.caching import Block, Marks, anthropic_breakpoints
from giant.llm.decode import Decoded, decode_step, decode_tool_call, json_objects, step_value
from giant.llm.image_tokens import anthropic_pixels
from giant.llm.providers.anthropic import AnthropicSettings
from giant.llm.providers.anthropic.batch import AnthropicBatches
from giant.llm.request_limits import ANTHROPIC_LIMITS
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
    Usage,
    UserMessage,
)

STEP_TOOL = "submit_step"
CACHE = {"type": "ephemeral"}  # the 5-minute TTL, the API's default
MAX_BREAKPOINTS = 4  # the API's limit per request
REACH = 16  # blocks between the last two breakpoints: with the 20-block lookback, reads reach 35 back
UNMARKABLE = ("thinking", "redacted_thinking")  # blocks that cannot carry cache_control


class AnthropicProvider(SdkProvider[AnthropicSettings]):
    name = "anthropic"
    image_formula = "anthropic"
    request_limits = ANTHROPIC_LIMITS  # the dry run checks a joint patch call against them
    image_tokens = staticmethod(anthropic_pixels)
    cache_rule = staticmethod(anthropic_breakpoints)

    @staticmethod
    def cache_breakpoints(blocks: Sequence[Block], write_newest: bool = True) -> Marks:
        """The message breakpoints, most useful first (the system prompt gets one only while fewer
        than MAX_BREAKPOINTS are used); the dry run asks this too (giant.eval.dryrun):
        1. the last block of the newest message (written for the next call), unless this call is
           meant to be the last (the answer is demanded: nothing would read it, and a write costs
           1.25x);
        2. the last block of the user message before the model's last turn: the previous call's
           newest message, which that call wrote, so this call reads it whatever the lookback;
        3. the block before the oldest crop image still shown: the part before it stays the same
           when agent.max_images_in_context drops the shown images (giant/agent/context.py);
        4. REACH blocks before that: its own lookback reaches the previous drop point, which a drop
           of several steps' images leaves more than ANTHROPIC_LOOKBACK blocks behind mark 3."""
        targets: list[int] = []
        if write_newest and blocks and blocks[-1].role == "user":
            targets.append(len(blocks) - 1)
        assistants = [block.message for block in blocks if block.role == "assistant"]
        if assistants and assistants[-1] > 0:
            previous = [n for n, block in enumerate(blocks) if block.message == assistants[-1] - 1]
            targets += previous[-1:]
        first_later = next(
            (n for n, block in enumerate(blocks) if block.message > 0 and block.type == "image"), None
        )
        if first_later is not None and blocks[first_later - 1].message > 0:
            targets.append(first_later - 1)
            reach = first_later - 1 - REACH
            while 0 < reach < first_later - 1 and blocks[reach].type in UNMARKABLE:
                reach += 1
            if 0 < reach < first_later - 1 and blocks[reach].message > 0:
                targets.append(reach)
        marked = tuple(dict.fromkeys(targets))[:MAX_BREAKPOINTS]
        return Marks(marked, len(marked) < MAX_BREAKPOINTS)

    client: anthropic.AsyncAnthropic

    def _client(self, http_client: Any) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(api_key=self._key, **client_options(self.cfg, http_client))

    def _batch_api(self) -> AnthropicBatches:
        return AnthropicBatches(self.client)

    @property
    def thinking(self) -> bool:
        return self.cfg.thinking_budget is not None

    @property
    def cache_marker(self) -> dict[str, str]:
        """cache_control of every breakpoint: one TTL for all, so no 1-hour entry follows a 5-minute
        one (the API's ordering rule); provider.cache_ttl only in batch mode (the setting's comment)."""
        if self.cfg.batch and self.cfg.cache_ttl == "1h":
            return {**CACHE, "ttl": "1h"}
        return CACHE

    # ------------------------------------------------------------------ request

    @staticmethod
    def _content(message: UserMessage) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, ImagePart):
                source = {"type": "base64", "media_type": part.image.media_type, "data": part.image.data_b64}
                content.append({"type": "image", "source": source})
            elif part.text:
                content.append({"type": "text", "text": part.text})
        return content

    def _assistant(self, message: AssistantMessage) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if any(s.call_id for s in message.steps):  # thinking is re-sent before the tool use it led to
            blocks += [_thinking_block(part) for part in message.reasoning if part.provider == self.name]
        for step in message.steps:
            if step.call_id is None:
                text = getattr(step.action, "text", None) or step.reasoning
                blocks.append({"type": "text", "text": text})
            elif self.cfg.protocol == "structured":
                blocks.append(
                    {"type": "tool_use", "id": step.call_id, "name": STEP_TOOL, "input": step_to_data(step)}
                )
            else:
                if step.reasoning != TOOL_ONLY_REASONING and step is message.steps[0]:
                    blocks.append({"type": "text", "text": step.reasoning})
                tool = function_tools()[step.action.type]
                args = {p: getattr(step.action, f) for p, f in tool.params.items()}
                blocks.append({"type": "tool_use", "id": step.call_id, "name": tool.name, "input": args})
        return blocks

    def _messages(self, conversation: Conversation) -> list[dict[str, Any]]:
        """Anthropic wants roles to alternate and every tool_use answered by a tool_result in the next
        user turn: consecutive user messages are merged and unanswered tool uses get a short result."""
        out: list[dict[str, Any]] = []
        pending: list[str] = []
        for message in conversation.messages:
            if isinstance(message, AssistantMessage):
                blocks = self._assistant(message)
                pending = [b["id"] for b in blocks if b["type"] == "tool_use"]
                out.append({"role": "assistant", "content": blocks})
                continue
            content = self._content(message)
            blocks = []
            if message.in_reply_to in pending:
                blocks.append({"type": "tool_result", "tool_use_id": message.in_reply_to, "content": content})
                pending.remove(message.in_reply_to)
                content = []
            blocks += [{"type": "tool_result", "tool_use_id": i, "content": "Received."} for i in pending]
            pending = []
            blocks += content
            if out and out[-1]["role"] == "user":
                out[-1]["content"] += blocks
            else:
                out.append({"role": "user", "content": blocks})
        return out

    def build_request(self, conversation: Conversation, ctx: CallContext) -> dict[str, Any]:
        cfg = self.cfg
        messages = self._messages(conversation)
        marker = self.cache_marker
        system_mark = cfg.prompt_caching and _mark_breakpoints(
            messages, marker, write_newest=not ctx.must_answer
        )
        request: dict[str, Any] = {"model": cfg.model, "max_tokens": cfg.max_tokens, "messages": messages}
        if conversation.system:
            system: dict[str, Any] = {"type": "text", "text": conversation.system}
            if system_mark:
                system["cache_control"] = marker
            request["system"] = [system]
        if self.thinking:
            request["thinking"] = {"type": "enabled", "budget_tokens": cfg.thinking_budget}
        elif cfg.temperature is not None:
            request["temperature"] = cfg.temperature
        if cfg.protocol == "structured":
            schema = step_schema(offered_actions(ctx))
            description = "Submit your reasoning and exactly one action for this step."
            request["tools"] = [{"name": STEP_TOOL, "description": description, "input_schema": schema}]
            # Forced tool use is rejected with extended thinking on.
            request["tool_choice"] = (
                {"type": "auto"} if self.thinking else {"type": "tool", "name": STEP_TOOL}
            )
        else:
            tools = offered_tools(ctx)
            if tools:
                request["tools"] = [
                    {"name": t.name, "description": t.description, "input_schema": t.parameters()}
                    for t in tools
                ]
                request["tool_choice"] = {"type": "auto"}  # constant: a change drops the message cache
        return request

    def _recorded(self, request: dict[str, Any]) -> dict[str, Any]:
        """Signatures are opaque and every later request repeats them: the record keeps their length."""
        return {**request, "messages": [_shrunk(m) for m in request["messages"]]}

    # ------------------------------------------------------------------ call

    async def _send(self, request: dict[str, Any]) -> Any:
        return await self.client.messages.create(**request)

    def _tokens(self, response: Any) -> Usage:
        raw = response.usage
        read = count(raw, "cache_read_input_tokens")
        write = count(raw, "cache_creation_input_tokens")
        return Usage(
            input_tokens=count(raw, "input_tokens") + read + write,  # Anthropic reports the three apart
            cached_input_tokens=read,
            cache_write_tokens=write,
            cache_write_1h_tokens=count(raw, "cache_creation", "ephemeral_1h_input_tokens"),
            output_tokens=count(raw, "output_tokens"),
            reasoning_tokens=count(raw, "output_tokens_details", "thinking_tokens"),
        )

    def _parse(self, response: Any, usage: Usage) -> ModelTurn:
        texts: list[str] = []
        thinking: list[Reasoning] = []
        calls: list[Any] = []
        for block in response.content or []:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "thinking":
                thinking.append(
                    Reasoning(provider=self.name, thinking=block.thinking, signature=block.signature)
                )
                block.signature = length_label("signature", block.signature)  # the audit record's copy
            elif block.type == "redacted_thinking":
                thinking.append(Reasoning(provider=self.name, signature=block.data, redacted=True))
                block.data = length_label("data", block.data)
            elif block.type == "tool_use":
                calls.append(block)
        text = "".join(texts).strip()
        raw_text = "\n".join([text, *(f"{c.name}({json.dumps(c.input)})" for c in calls)]).strip()
        if response.stop_reason == "refusal":
            raise RefusalError("anthropic: the model refused", raw_text=raw_text)
        if response.stop_reason == "max_tokens":
            raise ParseError("anthropic: reply truncated (max_tokens)", raw_text=raw_text)
        decoded = self._steps(text, calls, raw_text)
        return ModelTurn(
            steps=decoded.value, usage=usage, raw_text=raw_text, decode_note=decoded.note, reasoning=thinking
        )

    def _steps(self, text: str, calls: list[Any], raw_text: str) -> Decoded[list[Step]]:
        if self.cfg.protocol == "structured":
            if calls:
                if calls[0].name != STEP_TOOL:
                    raise ParseError(f"anthropic: unexpected tool {calls[0].name!r}", raw_text=raw_text)
                found = step_value(calls[0].input, raw_text)
                return Decoded([found.value.model_copy(update={"call_id": calls[0].id})], found.note)
            # Thinking on: tool_choice is auto, so the step may come as text; text holding no
            # step-shaped object is the answer.
            if any("action" in obj for _, _, obj in json_objects(text)):
                found = decode_step(text, raw_text)
                return Decoded([found.value], found.note)
        elif calls:  # the authors' Claude agent executes only the first tool call of a turn
            first = calls[0]
            action = decode_tool_call(tool_for(first.name, raw_text), first.input, raw_text)
            step = Step(reasoning=text or TOOL_ONLY_REASONING, action=action.value, call_id=first.id)
            return Decoded([step], action.note)
        if not text:
            raise ParseError("anthropic: empty reply (no text and no tool call)", raw_text=raw_text)
        return Decoded([Step(reasoning=text, action=AnswerAction(text=text))])


def _thinking_block(part: Reasoning) -> dict[str, Any]:
    if part.redacted:
        return {"type": "redacted_thinking", "data": part.signature}
    return {"type": "thinking", "thinking": part.thinking, "signature": part.signature}


def _shrunk(message: dict[str, Any]) -> dict[str, Any]:
    """An assistant message with its thinking signatures replaced by their length (audit records)."""
    if message["role"] != "assistant":
        return message
    content = []
    for block in message["content"]:
        if block["type"] == "thinking":
            block = {**block, "signature": length_label("signature", block["signature"])}
        elif block["type"] == "redacted_thinking":
            block = {**block, "data": length_label("data", block["data"])}
        content.append(block)
    return {**message, "content": content}


def _mark_breakpoints(messages: list[dict[str, Any]], marker: dict[str, str], *, write_newest: bool) -> bool:
    """Put cache_control `marker` on the blocks `AnthropicProvider.cache_breakpoints` names; True when
    the system prompt gets a breakpoint too."""
    slots = _block_slots(messages)
    blocks = [Block(m, messages[m]["role"], str(content[i].get("type"))) for m, content, i in slots]
    marks = AnthropicProvider.cache_breakpoints(blocks, write_newest)
    for n in marks.blocks:
        _, content, i = slots[n]
        content[i] = {**content[i], "cache_control": marker}
    return marks.system


def _block_slots(messages: list[dict[str, Any]]) -> list[tuple[int, list[dict[str, Any]], int]]:
    """Every content block in order as (message index, the list holding it, its index there); a
    tool_result's own blocks follow it."""
    slots = []
    for m, message in enumerate(messages):
        for i, block in enumerate(message["content"]):
            slots.append((m, message["content"], i))
            nested = block.get("content") if block.get("type") == "tool_result" else None
            if isinstance(nested, list):
                slots += [(m, nested, j) for j in range(len(nested))]
    return slots
