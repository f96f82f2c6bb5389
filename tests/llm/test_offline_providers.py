"""The random and scripted providers: deterministic, valid, and failing the way the agent expects."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from giant.core import AnswerSpace
from giant.errors import ConfigError
from giant.llm.config import ProviderConfig, provider_settings
from giant.llm.factory import build_provider
from giant.llm.types import (
    AnswerAction,
    CropAction,
    FatalProviderError,
    ModelTurn,
    NoteAction,
    ParseError,
    RefusalError,
    TransientError,
)
from tests.llm.conftest import make_conversation, make_ctx

RANDOM = provider_settings("random", model="chance", seed=3)


def turn(provider: object, **ctx: object) -> ModelTurn:
    return asyncio.run(provider.next_turn(make_conversation(), make_ctx(**ctx)))  # type: ignore[attr-defined]


def test_random_crops_stay_inside_the_slide_and_vary() -> None:
    provider = build_provider(RANDOM)
    boxes = set()
    for step in range(1, 60):
        action = turn(provider, step=step, slide_width=5000, slide_height=300).steps[0].action
        assert isinstance(action, CropAction)
        assert action.x + action.width <= 5000 and action.y + action.height <= 300
        boxes.add((action.x, action.y, action.width))
    assert len(boxes) > 40


def test_random_answers_cover_the_answer_space_in_the_model_format() -> None:
    provider = build_provider(RANDOM)
    labels = set()
    for item in range(200):
        result = turn(provider, item_key=f"tcga/{item}", must_answer=True)
        action = result.steps[0].action
        assert isinstance(action, AnswerAction)
        match = re.fullmatch(r"<report>.+</report>\n<response>(.+)</response>", action.text, re.S)
        assert match, action.text
        labels.add(json.loads(match.group(1))["answer"])
        assert result.usage.cost_usd == 0.0
    assert labels == {1, 2, 3, 4}


def test_random_grades_when_crops_are_not_allowed() -> None:
    provider = build_provider(RANDOM)
    grades = set()
    for item in range(200):
        action = (
            turn(provider, item_key=f"panda/{item}", allow_crop=False, answer_space=AnswerSpace(kind="grade"))
            .steps[0]
            .action
        )
        assert isinstance(action, AnswerAction)
        grades.add(json.loads(action.text.split("<response>")[1].split("</response>")[0])["isup_grade"])
    assert grades == {0, 1, 2, 3, 4, 5}


def test_random_answers_a_count_under_the_key_its_prompt_names() -> None:
    """A count question (no options, not PANDA) asks for {"answer": COUNT}, not an ISUP grade."""
    provider = build_provider(RANDOM)
    action = (
        turn(provider, item_key="demo_count/1", allow_crop=False, answer_space=AnswerSpace(kind="grade"))
        .steps[0]
        .action
    )
    assert isinstance(action, AnswerAction)
    response = json.loads(action.text.split("<response>")[1].split("</response>")[0])
    assert list(response) == ["answer"]


def test_random_depends_on_every_seed_part() -> None:
    provider = build_provider(RANDOM)
    base = turn(provider).steps[0].action
    assert turn(provider).steps[0].action == base
    for change in ({"seed": 1}, {"item_key": "tcga/8"}, {"run_index": 1}, {"step": 2}):
        assert turn(provider, **change).steps[0].action != base, change
    other = build_provider(RANDOM.model_copy(update={"seed": 4}))
    assert turn(other).steps[0].action != base


def test_random_is_reproducible_across_processes() -> None:
    """Python's hash() is salted per process; the provider must not depend on it."""
    code = (
        "import asyncio; from giant.llm.factory import build_provider; from giant.llm.config import "
        "provider_settings; from tests.llm.conftest import make_conversation, make_ctx; "
        "p = build_provider(provider_settings('random', model='chance', seed=3)); "
        "print(asyncio.run(p.next_turn(make_conversation(), make_ctx(step=5))).steps[0].action)"
    )
    root = Path(__file__).resolve().parents[2]
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": str(salt), "PATH": ""},
        ).stdout
        for salt in (1, 2)
    }
    assert len(outputs) == 1
    assert outputs.pop().strip() == str(turn(build_provider(RANDOM), step=5).steps[0].action)


# ----------------------------------------------------------------------------- scripted

CROP = {"reasoning": "look left", "action": {"type": "crop", "x": 10, "y": 20, "width": 300, "height": 400}}
ANSWER = {"reasoning": "done", "action": {"type": "answer", "text": '<response>{"answer": 2}</response>'}}


def write_script(tmp_path: Path, *lines: object) -> ProviderConfig:
    path = tmp_path / "script.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return provider_settings("scripted", model="replay", script=str(path))


def test_scripted_replays_each_item_from_line_one(tmp_path: Path) -> None:
    note = {"reasoning": "r", "action": {"type": "note", "text": "mitoses"}}
    provider = build_provider(write_script(tmp_path, CROP, [CROP, note], ANSWER))
    for key in ("a/1", "b/2"):
        first = turn(provider, item_key=key)
        assert first.steps[0].action == CropAction(x=10, y=20, width=300, height=400)
        assert first.steps[0].reasoning == "look left"
        assert [type(s.action) for s in turn(provider, item_key=key).steps] == [CropAction, NoteAction]
        assert isinstance(turn(provider, item_key=key).steps[0].action, AnswerAction)
    other_run = turn(provider, item_key="a/1", run_index=1)
    assert isinstance(other_run.steps[0].action, CropAction)
    assert other_run.usage.cost_usd == 0.0 and other_run.usage.input_tokens == 0


def test_scripted_errors_are_typed(tmp_path: Path) -> None:
    provider = build_provider(
        write_script(
            tmp_path,
            {"error": "transient"},
            {"error": "parse", "raw_text": '{"x": -22000}'},
            {"error": "refusal"},
            ANSWER,
        )
    )
    with pytest.raises(TransientError):
        turn(provider)
    with pytest.raises(ParseError) as parse:
        turn(provider)
    assert parse.value.raw_text == '{"x": -22000}'
    with pytest.raises(RefusalError):
        turn(provider)
    turn(provider)
    with pytest.raises(FatalProviderError, match=r"has 4 lines.*call 5"):
        turn(provider)


def test_scripted_sleep_delays_the_call(tmp_path: Path) -> None:
    provider = build_provider(write_script(tmp_path, {**CROP, "sleep": 0.3}))
    start = time.perf_counter()
    turn(provider)
    assert time.perf_counter() - start >= 0.3


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "needs a script: pass provider.script=FILE"),
        ("", "empty"),
        (
            '{"reasoning": "r", "action": {"type": "crop", "x": -1, "y": 0, "width": 1, "height": 1}}',
            r"line 1: invalid \(.*action.*x: Input should be greater than or equal to 0\)",
        ),
        ("not json", "line 1"),
        ('{"error": "boom"}', r"line 1: invalid \(error: Input should be 'transient'"),
    ],
)
def test_scripted_rejects_bad_scripts_up_front(tmp_path: Path, content: str | None, message: str) -> None:
    script = None
    if content is not None:
        script = tmp_path / "s.jsonl"
        script.write_text(content)
    with pytest.raises(ConfigError, match=message):
        build_provider(provider_settings("scripted", model="m", script=str(script) if script else None))


def test_scripted_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        build_provider(provider_settings("scripted", model="m", script=str(tmp_path / "nope.jsonl")))
