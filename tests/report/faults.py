"""A fault-injected job for the report tests: a test-only provider (the Provider protocol, not one of
our classes) whose behaviour is chosen per item, because the scripted provider replays the same lines
for every item and so cannot make 30% of them fail in different ways.

Items are PANDA-style grade questions (balanced accuracy). The plan says what each item does; the
test provider counts what it actually sent, so the report can be checked against both.
"""

from __future__ import annotations

from collections import Counter

from giant.core import Item
from giant.llm.providers.random.provider import format_answer
from giant.llm.types import (
    AnswerAction,
    CallContext,
    Conversation,
    CropAction,
    ModelTurn,
    ParseError,
    RefusalError,
    Step,
    Usage,
)
from tests.eval.runner_fixtures import SLIDES

N_ITEMS = 20
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
# item index -> injected fault: 6 of 20 (30%), each a different way of failing
FAULTS = {
    1: "invalid_boxes",
    4: "unparseable_reply",
    7: "refusal",
    10: "step_limit",
    13: "unparseable_answer",
    16: "null_grade",
}
NO_ZOOM = {2, 5}  # answer from the overview, without a crop
CALL_COST, INPUT, OUTPUT, CACHED = 0.01, 1000, 100, 400


def make_items() -> list[Item]:
    return [
        Item(
            benchmark="panda",
            benchmark_id=f"p{i:02d}",
            image_path=SLIDES[i % len(SLIDES)],
            prompt=f"Grade slide {i}.",
            truth=i % 6,
            metric="balanced_accuracy",
        )
        for i in range(N_ITEMS)
    ]


def index_of(key: str) -> int:
    return int(key.rsplit("p", 1)[1])


def planned_label(i: int) -> int:
    """Healthy items answer the truth for every third item and grade 0 otherwise: 0 dominates."""
    return i % 6 if i % 3 == 0 else 0


class FaultPlanProvider:
    name = "faultplan"
    model = "faultplan-1"

    def __init__(self) -> None:
        self.calls = 0
        self.replayed = 0
        self.sent: Counter[str] = Counter()  # what was sent, by kind

    def _usage(self, i: int) -> Usage:
        """Every fourth item's calls come from the ledger: no new cost, the old one recorded."""
        if i % 4 == 3:
            self.replayed += 1
            return Usage(
                input_tokens=INPUT,
                output_tokens=OUTPUT,
                cached_input_tokens=CACHED,
                calls_replayed=1,
                replayed_cost_usd=CALL_COST,
                cost_usd=0.0,
            )
        return Usage(input_tokens=INPUT, output_tokens=OUTPUT, cached_input_tokens=CACHED, cost_usd=CALL_COST)

    async def next_turn(self, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        self.calls += 1
        i = index_of(ctx.item_key)
        usage = self._usage(i)
        fault = FAULTS.get(i)
        if fault == "unparseable_reply":
            self.sent["parse"] += 1
            raise ParseError("reply is not a step", usage=usage, raw_text=f"Let me think {HOSTILE}")
        if fault == "refusal":
            self.sent["refusal"] += 1
            raise RefusalError(f"the model declined: {HOSTILE}", usage=usage)
        if fault == "invalid_boxes":
            self.sent["invalid_box"] += 1
            box = CropAction(x=ctx.slide_width + 10, y=0, width=100, height=100)
            return self._turn(box, usage)
        if fault == "step_limit" or (ctx.step == 1 and i not in NO_ZOOM):
            if ctx.must_answer:
                self.sent["crop_when_due"] += 1
            side = min(ctx.slide_width, ctx.slide_height) // 2
            return self._turn(CropAction(x=ctx.step * 10, y=0, width=side, height=side), usage)
        if fault == "unparseable_answer":
            return self._turn(AnswerAction(text=f"I cannot tell. {HOSTILE}"), usage)
        if fault == "null_grade":
            return self._turn(AnswerAction(text='<response>{"isup_grade": null}</response>'), usage)
        text = format_answer(ctx.answer_space, planned_label(i), f"Report {HOSTILE}")
        return self._turn(AnswerAction(text=text), usage)

    @staticmethod
    def _turn(action: CropAction | AnswerAction, usage: Usage) -> ModelTurn:
        step = Step(reasoning=f"Reasoning {HOSTILE}", action=action)
        return ModelTurn(steps=[step], usage=usage, raw_text=step.model_dump_json())


def expected_causes() -> Counter[str]:
    """The taxonomy the plan must produce, cause -> item-runs."""
    counts = Counter(FAULTS.values())
    counts["answered_without_zooming"] = len(NO_ZOOM)
    counts["answered"] = N_ITEMS - len(FAULTS) - len(NO_ZOOM)
    return counts
