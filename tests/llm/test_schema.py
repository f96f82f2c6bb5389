"""The step schema is derived from the pydantic actions (paper_facts §11) and obeys strict mode."""

from __future__ import annotations

from typing import Any

import pytest

from giant.llm.schema import (
    function_tools,
    offered_actions,
    step_from_data,
    step_schema,
)
from giant.llm.types import CropAction, NoteAction, ParseError, Step, action_models
from tests.llm.conftest import make_ctx

ALL = ("crop", "answer", "note", "conch")
CONSTRAINT_KEYS = {"minimum", "exclusiveMinimum", "maximum", "minLength", "maxLength", "minItems", "pattern"}


def constraints(schema: dict[str, Any]) -> dict[str, Any]:
    found = {k: v for k, v in schema.items() if k in CONSTRAINT_KEYS}
    if "items" in schema:
        found["items"] = constraints(schema["items"])
    return found


def object_nodes(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        own = [node] if node.get("type") == "object" else []
        return own + [n for v in node.values() for n in object_nodes(v)]
    if isinstance(node, list):
        return [n for v in node for n in object_nodes(v)]
    return []


def keys_anywhere(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {k for v in node.values() for k in keys_anywhere(v)}
    if isinstance(node, list):
        return {k for v in node for k in keys_anywhere(v)}
    return set()


def test_every_pydantic_constraint_is_in_the_schema() -> None:
    schema = step_schema(ALL)
    action = schema["properties"]["action"]["properties"]
    checked = 0
    for model in action_models().values():
        for name, prop in model.model_json_schema()["properties"].items():
            if name == "type":
                continue
            assert constraints(action[name]) == constraints(prop), name
            checked += bool(constraints(prop))
    assert checked == 15  # x, y, width, height (crop, cells, caption), text (answer and note), hypotheses
    reasoning = Step.model_json_schema()["properties"]["reasoning"]
    assert constraints(schema["properties"]["reasoning"]) == constraints(reasoning)


def test_the_design_note_bounds_are_present() -> None:
    schema = step_schema(ALL)
    action = schema["properties"]["action"]["properties"]
    assert schema["properties"]["reasoning"]["minLength"] == 1
    assert action["x"]["minimum"] == 0 and action["y"]["minimum"] == 0
    assert action["width"]["exclusiveMinimum"] == 0 and action["height"]["exclusiveMinimum"] == 0
    assert action["text"]["minLength"] == 1


def test_strict_mode_rules_hold() -> None:
    schema = step_schema(ALL)
    nodes = object_nodes(schema)
    assert len(nodes) == 2
    for node in nodes:
        assert node["additionalProperties"] is False
        assert node["required"] == list(node["properties"])
    assert not keys_anywhere(schema) & {"oneOf", "anyOf", "allOf", "$ref", "$defs", "default", "title"}
    action = schema["properties"]["action"]["properties"]
    assert action["type"] == {
        "type": "string",
        "enum": list(ALL),
        "description": action["type"]["description"],
    }
    for name, prop in action.items():
        if name != "type":
            assert prop["type"][-1] == "null", name  # nullable: each field belongs to one action only


def test_offered_actions_follow_the_context() -> None:
    assert offered_actions(make_ctx()) == ("crop", "answer")
    assert offered_actions(make_ctx(extra_actions=("note",))) == ("crop", "answer", "note")
    # a demanded answer keeps every action (the schema is part of the cached prefix)
    assert offered_actions(make_ctx(must_answer=True, extra_actions=("note",))) == ("crop", "answer", "note")
    assert offered_actions(make_ctx(allow_crop=False)) == ("answer",)
    answer_only = step_schema(("answer",))["properties"]["action"]["properties"]
    assert set(answer_only) == {"type", "text"}


def test_tool_parameters_carry_the_same_constraints() -> None:
    zoom = function_tools()["crop"].parameters()
    crop = CropAction.model_json_schema()["properties"]
    for param, field in function_tools()["crop"].params.items():
        assert constraints(zoom["properties"][param]) == constraints(crop[field])
    assert zoom["additionalProperties"] is False and zoom["required"] == ["x0", "y0", "w", "h"]
    assert function_tools()["note"].parameters()["properties"]["observation"]["minLength"] == 1


def test_flattened_reply_is_validated_by_pydantic() -> None:
    nulls = {"x": None, "y": None, "width": None, "height": None}
    step = step_from_data({"reasoning": "r", "action": {"type": "note", "text": "t", **nulls}}, "raw")
    assert step.action == NoteAction(text="t")
    for bad in (
        {"reasoning": "", "action": {"type": "note", "text": "t"}},
        {"reasoning": "r", "action": {"type": "crop", "x": 0, "y": 0, "width": 0, "height": 5}},
        {"reasoning": "r", "action": {"type": "answer", "text": None}},
        {"reasoning": "r", "action": {"type": "jump"}},
        {"reasoning": "r"},
        [],
    ):
        with pytest.raises(ParseError) as err:
            step_from_data(bad, "the raw reply")
        assert err.value.raw_text == "the raw reply"
