"""Patch mode through the runner: the agent returns one answer per patch and eval reads and votes
them with the run's settings (panda_null_as_zero, tie_rule), as it reads every other answer."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from giant.agent.modes import parse_agent
from giant.core import Item
from giant.llm.types import AnswerAction, CallContext, Conversation, ModelTurn, Step, Usage
from giant.record import read_results
from tests.eval.runner_fixtures import SLIDES, evaluate

PATCH = parse_agent({"mode": "patch", "max_steps": 1, "patch_count": 3, "patch_size": 64})


class PatchReplies:
    """Answers the patches' calls in the order they are made (the agent asks patch 1 first)."""

    name = "patch-replies"
    model = "patch-replies-1"

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.calls = 0

    async def next_turn(self, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        text = self.texts[self.calls % len(self.texts)]
        self.calls += 1
        await asyncio.sleep(0)
        return ModelTurn(steps=[Step(reasoning="patch", action=AnswerAction(text=text))], usage=Usage())


def grade(value: int | None) -> str:
    return f"<report>one patch</report>\n<response>{json.dumps({'isup_grade': value})}</response>"


def panda_item(truth: int) -> Item:
    return Item(
        benchmark="panda",
        benchmark_id="1",
        image_path=SLIDES[0],
        prompt="ISUP grade?",
        options=(),
        truth=truth,
        metric="balanced_accuracy",
    )


@pytest.mark.parametrize(
    ("null_as_zero", "label", "patch_labels"),
    [(True, 0, [0, 3, 0]), (False, 3, [None, 3, None])],
)
def test_patch_vote_reads_null_grades_with_the_run_setting(
    tmp_path: Path, wsi_root: Path, null_as_zero: bool, label: int, patch_labels: list[int | None]
) -> None:
    provider = PatchReplies([grade(None), grade(3), grade(None)])
    asyncio.run(
        evaluate(
            [panda_item(truth=0)], wsi_root, provider, tmp_path, agent=PATCH, panda_null_as_zero=null_as_zero
        )
    )
    [record] = read_results(tmp_path / "results.jsonl")
    assert (record.label, record.patch_labels, record.method) == (label, patch_labels, "patch_vote")
    assert record.correct is (label == 0)
    assert record.prediction is None  # patch mode has no single answer: each patch's is in `answers`
    assert record.answers == [json.dumps({"isup_grade": v}) for v in (None, 3, None)]


def test_patch_null_answers_are_no_answer_without_null_as_zero(tmp_path: Path, wsi_root: Path) -> None:
    provider = PatchReplies([grade(None)])
    summary = asyncio.run(
        evaluate([panda_item(truth=0)], wsi_root, provider, tmp_path, agent=PATCH, panda_null_as_zero=False)
    )
    [record] = read_results(tmp_path / "results.jsonl")
    assert record.status == "unparseable" and record.label is None and not record.correct
    assert record.patch_labels == [None, None, None]
    assert summary.n_scored == 0 and summary.counts_by_status == {"unparseable": 1}


def test_patch_vote_tie_goes_to_the_lowest_numbered_patch(tmp_path: Path, wsi_root: Path) -> None:
    provider = PatchReplies([grade(2), grade(4), grade(4), grade(2)])
    agent = PATCH.model_copy(update={"patch_count": 4})
    asyncio.run(evaluate([panda_item(truth=2)], wsi_root, provider, tmp_path, agent=agent))
    [record] = read_results(tmp_path / "results.jsonl")
    assert record.patch_labels == [2, 4, 4, 2] and record.label == 2 and record.correct
