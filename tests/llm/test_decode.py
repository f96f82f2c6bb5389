"""The one decoder every provider shares: the first valid JSON step in a reply, nested JSON strings."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from giant.agent.episode import run_episode
from giant.agent.modes import parse_agent
from giant.llm.config import provider_settings
from giant.llm.decode import decode_arguments, decode_step, decode_tool_call, json_objects, step_value
from giant.llm.factory import build_provider
from giant.llm.schema import Tool, function_tools, step_schema
from giant.llm.types import AnswerAction, CropAction, ParseError
from giant.record.trajectory import Trajectory
from giant.wsi.synthetic import write_synthetic_slide
from tests.eval.runner_fixtures import make_items
from tests.llm.mock_api import MockAPI, message, messy_replies, responses_body, step_json

CROP = {"type": "crop", "x": 10, "y": 20, "width": 30, "height": 40}
VALID = step_json(CROP)
INVALID = step_json({**CROP, "y": -22000})
ALL_KINDS = step_schema(("crop", "answer", "note"))


def test_a_clean_reply_has_no_note() -> None:
    decoded = decode_step(VALID)
    assert decoded.value.action == CropAction(x=10, y=20, width=30, height=40)
    assert decoded.note is None
    assert decode_step(f"  {VALID}\n").note is None  # surrounding whitespace is not a finding


@pytest.mark.parametrize(
    "case", ["chatter_after", "same_object_twice", "prose_then_fence", "invalid_then_valid"]
)
def test_the_first_valid_step_is_taken_and_the_rest_noted(case: str) -> None:
    reply, phrase = messy_replies(VALID, INVALID)[case]
    decoded = decode_step(reply)
    assert decoded.value.action == CropAction(x=10, y=20, width=30, height=40)
    assert decoded.note is not None and phrase in decoded.note


def test_a_skipped_object_is_named_with_its_validation_message() -> None:
    decoded = decode_step(f"{INVALID}\nOops. {VALID}")
    assert decoded.note == (
        "text before the JSON ignored (5 chars); 1 earlier JSON object(s) skipped: reply is not a valid step "
        "(action.crop.y: Input should be greater than or equal to 0)"
    )


def test_the_first_of_two_valid_steps_wins() -> None:
    other = step_json({**CROP, "x": 99})
    assert decode_step(f"{VALID}\n{other}").value.action == CropAction(x=10, y=20, width=30, height=40)


def test_no_valid_step_is_a_parse_error_with_the_first_message_and_the_raw_text() -> None:
    second_invalid = step_json({**CROP, "width": 0})
    reply = f"{INVALID} and {second_invalid}"
    with pytest.raises(ParseError, match=r"action\.crop\.y") as err:
        decode_step(reply)
    assert err.value.raw_text == reply
    for text in ("I think it is a carcinoma.", '{"reasoning": "x", "action": {', ""):
        with pytest.raises(ParseError, match="no complete JSON object") as err:
            decode_step(text, raw_text=f"full: {text}")
        assert err.value.raw_text == f"full: {text}"
    with pytest.raises(ParseError, match="not an object with an 'action' object"):
        decode_step('{"answer": 3}')


def test_answer_text_with_json_inside_stays_text() -> None:
    """The answer's own JSON (`<response>{"answer": 3}</response>`, or exactly `{"answer": 3}`) is
    part of a string field: it is neither decoded nor taken for a reply object of its own."""
    for text in ('<report>r</report>\n<response>{"answer": 3}</response>', '{"answer": 3}', "{not json}"):
        reply = step_json({"type": "answer", "text": text}, reasoning="braces {like this} in reasoning")
        decoded = decode_step(f"{reply} trailing")
        assert decoded.value.action == AnswerAction(text=text)
        assert decoded.value.reasoning == "braces {like this} in reasoning"


def test_a_stringified_action_is_decoded_and_noted() -> None:
    data = {"reasoning": "r", "action": json.dumps(CROP)}
    decoded = step_value(data, "raw")
    assert decoded.value.action == CropAction(x=10, y=20, width=30, height=40)
    assert decoded.note == "JSON string decoded in action"
    # the same inside a text reply
    assert decode_step(json.dumps(data)).value.action == CropAction(x=10, y=20, width=30, height=40)


def test_decode_arguments_follows_the_schema_not_the_look_of_the_string() -> None:
    paths: list[str] = []
    value = {
        "reasoning": '{"looks": "like json"}',
        "action": json.dumps({"type": "note", "text": "[1, 2]"}),
    }
    out = decode_arguments(value, ALL_KINDS, paths)
    assert out == {
        "reasoning": '{"looks": "like json"}',  # a string field: kept although it is valid JSON
        "action": {"type": "note", "text": "[1, 2]"},  # decoded object; its string field stays
    }
    assert paths == ["action"]
    tags = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}
    assert decode_arguments({"tags": '["tumour", "stroma"]'}, tags, paths) == {"tags": ["tumour", "stroma"]}
    assert paths == ["action", "tags"]
    broken = {"reasoning": "r", "action": '{"type": "crop", "x": '}
    assert decode_arguments(broken, ALL_KINDS) == broken  # left for validation to name
    assert decode_arguments({"reasoning": "r", "action": CROP}, ALL_KINDS) == {
        "reasoning": "r",
        "action": CROP,
    }


def test_json_objects_never_start_inside_a_decoded_object() -> None:
    text = 'a {"s": "{\\"inner\\": 1}", "t": {"u": 2}} b {bad} {"v": 3}'
    assert [obj for _, _, obj in json_objects(text)] == [{"s": '{"inner": 1}', "t": {"u": 2}}, {"v": 3}]


def test_tool_calls_decode_text_and_object_arguments() -> None:
    zoom: Tool = function_tools()["crop"]
    args = {"x0": 1, "y0": 2, "w": 3, "h": 4}
    assert decode_tool_call(zoom, json.dumps(args), "raw").value == CropAction(x=1, y=2, width=3, height=4)
    assert decode_tool_call(zoom, args, "raw").note is None
    repeated = decode_tool_call(zoom, json.dumps(args) * 2, "raw")
    assert repeated.value == CropAction(x=1, y=2, width=3, height=4)
    assert repeated.note == f"extra text after the JSON ignored ({len(json.dumps(args))} chars)"
    with pytest.raises(ParseError, match="slide_zoom: arguments are not a JSON object") as err:
        decode_tool_call(zoom, "x0=1", "slide_zoom(x0=1)")
    assert err.value.raw_text == "slide_zoom(x0=1)"
    with pytest.raises(ParseError, match=r"slide_zoom: invalid arguments \(x: "):
        decode_tool_call(zoom, {**args, "x0": -5}, "raw")


def test_an_episode_keeps_the_whole_reply_and_the_decode_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end through the real OpenAI SDK: before the shared decoder, chatter after the JSON
    failed the call (parse error, retries, item failed); now the item is answered and the trajectory
    says what was passed over."""
    slide = write_synthetic_slide(tmp_path / "slide.svs", 3000, 2000, seed=1)
    item = make_items(1, ["slide.svs"])[0]
    crop = step_json({"type": "crop", "x": 100, "y": 100, "width": 800, "height": 600})
    answer = step_json({"type": "answer", "text": '<response>{"answer": 2}</response>'})
    api = MockAPI(
        responses_body(message(f"{crop}\nI hope this helps!")),
        responses_body(message(f"{answer}\n{answer}")),
    )

    async def go() -> Trajectory:
        provider = build_provider(provider_settings("openai", model="gpt-5"), http_client=api.client())
        return await run_episode(
            item, slide, provider, parse_agent({"mode": "giant", "max_steps": 5}), out_dir=tmp_path / "traj"
        )

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    trajectory = asyncio.run(go())
    assert trajectory.status == "answered" and [c.error for c in trajectory.calls] == [None, None]
    first, second = trajectory.calls
    assert first.raw_text.endswith("I hope this helps!")
    assert first.decode_note == "extra text after the JSON ignored (18 chars)"
    assert second.decode_note == f"extra text after the JSON ignored ({len(answer)} chars)"
    saved = Trajectory.model_validate_json((tmp_path / "traj" / "trajectory.json").read_text())
    assert [c.decode_note for c in saved.calls] == [first.decode_note, second.decode_note]


# Issue 25: replies that are not strict JSON, each holding strings that a text-level repair (global
# true/false/null or trailing-comma replaces) would rewrite; every string must come back as written.
LENIENT = [
    ("{'answer': 'true positive', 'sure': True}", {"answer": "true positive", "sure": True}),
    (
        "{'answer': 'None of the above', 'second': None, 'seen': false,}",
        {"answer": "None of the above", "second": None, "seen": False},
    ),
    (
        '{"answer": "null hypothesis", "p": null, "ok": True}',
        {"answer": "null hypothesis", "p": None, "ok": True},
    ),
    (
        "{'answer': \"it's\", 'note': 'it\\'s true', 'tags': ['False', 'b',],}",
        {"answer": "it's", "note": "it's true", "tags": ["False", "b"]},
    ),
    ('{"answer": "a,}", "b": "c, ]", "ok": False,}', {"answer": "a,}", "b": "c, ]", "ok": False}),
    ('{"answer": "line one\nline two, }", "n": -2.5e1}', {"answer": "line one\nline two, }", "n": -25.0}),
]


@pytest.mark.parametrize(("reply", "expected"), LENIENT)
def test_lenient_objects_keep_every_string_as_written(reply: str, expected: dict[str, object]) -> None:
    for text in (reply, f"Here it is:\n```json\n{reply}\n```\nDone {{not json}}.", f"<response>{reply}"):
        assert [obj for *_, obj in json_objects(text)] == [expected]


@pytest.mark.parametrize(
    "text",
    [
        '{"answer": YOUR_ANSWER}',
        "{answer: 2}",
        "{'a': (1, 2)}",
        "{'a': 'unclosed}",
        "{'answer': 3",
        "it's {a brace in prose, 'then' a quote}",
    ],
)
def test_what_is_not_an_object_stays_none(text: str) -> None:
    assert list(json_objects(text)) == []


def test_a_python_literal_step_decodes_with_its_strings_unchanged() -> None:
    text = "true positive, null hypothesis, None of the above,}"
    reply = (
        "Next step:\n```python\n{'reasoning': \"it's True: null findings\", "
        f"'action': {{'type': 'answer', 'text': {text!r},}},}}\n```"
    )
    decoded = decode_step(reply)
    assert decoded.value.action == AnswerAction(text=text)
    assert decoded.value.reasoning == "it's True: null findings"
