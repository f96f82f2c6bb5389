"""Step schemas and tool definitions generated from the pydantic action models.

The pydantic models in giant.llm.types are the only place a constraint is written: every schema a
provider sends (OpenAI strict json_schema, Anthropic tool input_schema, Chat Completions
response_format, function tools) is derived here, so schema and validation can never drift
(paper_facts §11: a hand-written schema lacked the bounds and the model sent y = -22000).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from giant.llm.types import CallContext, ParseError, Step, action_models
from giant.registry import members

# Guidance for the model only; constraints come from the pydantic models. A tool adds its own fields'.
_HINTS = {
    "reasoning": "Your reasoning for this step.",
    "type": "Which action to take.",
    "x": "crop: left edge, level-0 pixels (null for other actions).",
    "y": "crop: top edge, level-0 pixels (null for other actions).",
    "width": "crop: width, level-0 pixels (null for other actions).",
    "height": "crop: height, level-0 pixels (null for other actions).",
    "text": "answer: the final report and response; note: the observation (null for other actions).",
}


def _hints(kinds: tuple[str, ...]) -> dict[str, str]:
    """The field hints of the offered actions: a registered tool the run does not offer adds nothing."""
    return _HINTS | {
        k: v for name, tool in members("tool").items() if name in kinds for k, v in tool.hints.items()
    }


def offered_actions(ctx: CallContext) -> tuple[str, ...]:
    """Only an answer when crops are not allowed (one-shot modes); else crop, answer and extras, at
    every step of the item alike. The schema is part of the cached prompt prefix, so a demanded
    answer (ctx.must_answer) is asked for in the message and enforced by the agent, which rejects a
    crop with a corrective message, never by narrowing the schema (that would make the final call,
    the longest of the item, miss the cache)."""
    if not ctx.allow_crop:
        return ("answer",)
    return ("crop", "answer", *ctx.extra_actions)


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k not in ("title", "default")}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def field_schema(model: type[BaseModel], field: str) -> dict[str, Any]:
    """One field's JSON schema exactly as pydantic derives it (constraints kept, titles dropped)."""
    schema: dict[str, Any] = _strip_titles(model.model_json_schema()["properties"][field])
    return schema


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(schema)
    out["type"] = [out["type"], "null"]
    return out


def step_schema(kinds: tuple[str, ...]) -> dict[str, Any]:
    """The step as one strict-mode object: {reasoning, action}, the action a flattened union.

    Strict mode has no oneOf, so every action's fields live in one object, nullable, all required,
    with additionalProperties false at every level.
    """
    properties: dict[str, Any] = {"type": {"type": "string", "enum": list(kinds)}}
    models, hints = action_models(), _hints(kinds)
    for kind in kinds:
        model = models[kind]
        for name in model.model_fields:
            if name == "type":
                continue
            schema = _nullable(field_schema(model, name))
            if properties.setdefault(name, schema) != schema:
                raise ValueError(f"action field {name!r} has different constraints in two actions")
    for name, prop in properties.items():
        prop["description"] = hints[name]
    action = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    reasoning = field_schema(Step, "reasoning") | {"description": hints["reasoning"]}
    return {
        "type": "object",
        "properties": {"reasoning": reasoning, "action": action},
        "required": ["reasoning", "action"],
        "additionalProperties": False,
    }


# ----------------------------------------------------------------------------- validation
# (finding the object in a reply is giant.llm.decode's job)


def _first_line(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}" if where else err["msg"]


def step_from_data(data: Any, raw_text: str) -> Step:
    """Validate a decoded reply through the pydantic models; any violation is a ParseError with the raw text.

    Null fields of the flattened union (and fields of other actions) are dropped first.
    """
    if not isinstance(data, dict) or not isinstance(data.get("action"), dict):
        raise ParseError("reply is not an object with an 'action' object", raw_text=raw_text)
    action = data["action"]
    kind = action.get("type")
    model = action_models().get(kind) if isinstance(kind, str) else None
    if model is None:
        raise ParseError(f"reply has unknown action type {kind!r}", raw_text=raw_text)
    fields = {k: v for k, v in action.items() if k in model.model_fields and v is not None}
    try:
        return Step.model_validate({"reasoning": data.get("reasoning"), "action": fields})
    except ValidationError as exc:
        raise ParseError(f"reply is not a valid step ({_first_line(exc)})", raw_text=raw_text) from None


def step_to_data(step: Step) -> dict[str, Any]:
    """An earlier step as the model would have written it (for re-sending the history)."""
    return {"reasoning": step.reasoning, "action": step.action.model_dump()}


# ----------------------------------------------------------------------------- tools mode

TOOL_ONLY_REASONING = "(tool call without text)"  # Step.reasoning must be non-empty


@dataclass(frozen=True)
class Tool:
    """A function tool (the authors' protocol): its parameters map onto one action model's fields."""

    name: str
    kind: str
    description: str
    params: dict[str, str]  # tool parameter -> action field

    def parameters(self) -> dict[str, Any]:
        model = action_models()[self.kind]
        return {
            "type": "object",
            "properties": {p: field_schema(model, f) for p, f in self.params.items()},
            "required": list(self.params),
            "additionalProperties": False,
        }

    def validate(self, args: Any, raw_text: str) -> BaseModel:
        """Decoded arguments as the action; ParseError (raw text kept) when they are invalid."""
        if not isinstance(args, dict):
            raise ParseError(f"{self.name}: arguments are not an object", raw_text=raw_text)
        try:
            return action_models()[self.kind].model_validate({f: args.get(p) for p, f in self.params.items()})
        except ValidationError as exc:
            raise ParseError(
                f"{self.name}: invalid arguments ({_first_line(exc)})", raw_text=raw_text
            ) from None

    def arguments(self, action: BaseModel) -> str:
        return json.dumps({p: getattr(action, f) for p, f in self.params.items()})


BUILTIN_TOOLS: dict[str, Tool] = {
    tool.kind: tool
    for tool in (
        Tool(
            "slide_zoom",
            "crop",
            "Zoom into a region of the whole-slide image. x0, y0: top-left corner; w, h: width and "
            "height; all in level-0 pixels.",
            {"x0": "x", "y0": "y", "w": "width", "h": "height"},
        ),
        Tool("note", "note", "Record an observation to keep in mind.", {"observation": "text"}),
    )
}


def _function_tool(name: str, tool: Any) -> Tool:
    """A registered tool (giant.tools), called by its name with its action's fields as parameters."""
    return Tool(name, name, tool.description, {f: f for f in tool.action.model_fields if f != "type"})


def function_tools() -> dict[str, Tool]:
    """Every function tool by action kind, the built-in ones first: what a reply may call and a
    re-sent history may hold, whatever this run offers (the agent rejects what it does not offer)."""
    return BUILTIN_TOOLS | {name: _function_tool(name, tool) for name, tool in members("tool").items()}


def offered_tools(ctx: CallContext) -> list[Tool]:
    """Every tool the item may use, built from the run's offered actions only; kept constant across an
    item's calls so the prompt prefix caches (the final answer is demanded with tool_choice, not by
    dropping tools)."""
    if not ctx.allow_crop:
        return []
    registered = members("tool")
    kinds = ("crop", *ctx.extra_actions)
    return [BUILTIN_TOOLS[k] if k in BUILTIN_TOOLS else _function_tool(k, registered[k]) for k in kinds]


def tool_for(name: str, raw_text: str) -> Tool:
    tool = next((tool for tool in function_tools().values() if tool.name == name), None)
    if tool is None:
        raise ParseError(f"model called unknown tool {name!r}", raw_text=raw_text)
    return tool
