"""The chance baseline: random valid crops, then a uniformly random valid answer.

Every draw is seeded from (cfg.seed, ctx.seed, item, run, step) through SHA-256, not Python's
salted hash(), so a run is reproducible across processes and machines. No network, zero cost.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from giant.core import AnswerSpace
from giant.llm.caching import no_breakpoints, no_caching
from giant.llm.image_tokens import openai_high_detail
from giant.llm.ledger import Ledger
from giant.llm.providers.random import RandomSettings
from giant.llm.types import AnswerAction, CallContext, Conversation, CropAction, ModelTurn, Step, Usage


def stable_rng(*parts: object) -> random.Random:
    """A generator seeded by the parts' JSON text: the same parts give the same draws everywhere."""
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


GRADED_TASK = "panda"  # the one task whose prompt asks for {"isup_grade": N}; the others for "answer"


def format_answer(space: AnswerSpace, label: int, report: str, *, item_key: str = "") -> str:
    """The reply shape real models are asked for: a report block and a JSON response block, under the
    key the item's prompt names (PANDA's `isup_grade`; `answer` for options and counts)."""
    grade = space.kind == "grade" and item_key.split("/", 1)[0] == GRADED_TASK
    key = "isup_grade" if grade else "answer"
    return f"<report>{report}</report>\n<response>{json.dumps({key: label})}</response>"


def random_label(space: AnswerSpace, rng: random.Random) -> int:
    if space.kind == "grade":
        return rng.randint(0, 5)
    if space.n_options < 1:
        raise ValueError(f"answer space has no options ({space!r}); cannot draw a random answer")
    return rng.randint(1, space.n_options)


class RandomProvider:
    """Crops anywhere inside the slide; answers when the agent demands it or crops are not allowed."""

    name = "random"
    # It looks at no image; the dry run estimates it as the default model it stands in for.
    image_formula = "openai_high_detail"
    image_tokens = staticmethod(openai_high_detail)
    cache_rule = staticmethod(no_caching)
    cache_breakpoints = staticmethod(no_breakpoints)  # its requests mark no breakpoint

    def __init__(self, cfg: RandomSettings, *, http_client: Any = None, ledger: Ledger | None = None) -> None:
        self.model = cfg.model
        self.seed = cfg.seed

    async def next_turn(self, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        rng = stable_rng(self.seed, ctx.seed, ctx.item_key, ctx.run_index, ctx.step)
        can_crop = ctx.allow_crop and ctx.slide_width > 0 and ctx.slide_height > 0
        if ctx.must_answer or not can_crop:
            label = random_label(ctx.answer_space, rng)
            report = "Random baseline: the answer is drawn by chance."
            text = format_answer(ctx.answer_space, label, report, item_key=ctx.item_key)
            step = Step(reasoning="Random baseline answer.", action=AnswerAction(text=text))
        else:
            # Squares from 1/20 of the short side up to all of it: crops that look like a model's.
            short = min(ctx.slide_width, ctx.slide_height)
            side = rng.randint(max(1, short // 20), short)
            x = rng.randint(0, ctx.slide_width - side)
            y = rng.randint(0, ctx.slide_height - side)
            step = Step(
                reasoning="Random baseline crop.", action=CropAction(x=x, y=y, width=side, height=side)
            )
        return ModelTurn(steps=[step], usage=Usage(cost_usd=0.0), raw_text=step.model_dump_json())
