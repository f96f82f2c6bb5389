"""The conch tool (paper Table 3): text hypotheses scored against the latest image.

A call reads the region again from the slide at the scorer's input size, scores the hypotheses,
records the call, and words the reply (highest score first). The region is re-read rather than taken
from the JPEG the model saw: the scorer then gets the slide's own pixels at its own resolution (no
second compression, no resize of a resize). Like CONCH's own preprocessing (short side to the input
size, then the central square), the scorer sees the central square of the region, read directly at
input_size x input_size pixels.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any, ClassVar, Literal, Self

from pydantic import Field

from giant.actions import ActionModel, NonEmptyStr
from giant.core import Box
from giant.registry import register
from giant.tools.base import Seen, Tool, ToolContext, ToolRecord, UnusableCall
from giant.tools.conch.settings import HYPOTHESES_CAP, ConchSettings
from giant.tools.scorer import Scorer


class ConchAction(ActionModel):
    """The CONCH tool (paper Table 3): text hypotheses scored against the most recent image."""

    type: Literal["conch"] = "conch"
    hypotheses: list[NonEmptyStr] = Field(min_length=1, max_length=HYPOTHESES_CAP)


class ConchRecord(ToolRecord):
    """One conch call: what was scored and the scores."""

    model: str  # the scorer's label, e.g. "CONCH (MahmoodLab/CONCH)" or "tiny-random (seed 0)"
    image: str  # which image the model meant: "the overview" or "crop N"
    region: Box  # level-0 box the scorer saw (the central square of that image's region)
    input_size: int  # pixels on a side, read from the slide at the scorer's resolution
    hypotheses: list[str]
    scores: list[float]  # one per hypothesis, in the hypotheses' order
    seconds: float = 0.0

    def ranked(self) -> list[tuple[str, float]]:
        """(hypothesis, score) pairs, highest score first, as the model was told (ties keep its order)."""
        return sorted(zip(self.hypotheses, self.scores, strict=True), key=lambda pair: -pair[1])


def central_square(box: Box) -> Box:
    """The largest square centred in `box` (what a short-side resize and centre crop would keep)."""
    side = min(box.w, box.h)
    return Box(x=box.x + (box.w - side) // 2, y=box.y + (box.h - side) // 2, w=side, h=side)


def conch_prompt(max_hypotheses: int) -> str:
    """The system prompt's paragraph on the CONCH tool (paper Table 3), appended when it is enabled."""
    return (
        "You can also consult CONCH, a vision-language model trained on pathology images and their "
        f"captions: the conch action takes 1 to {max_hypotheses} short descriptions of what the tissue "
        "might show and scores each against your latest image (the overview before your first crop). "
        "Each score is a cosine similarity, higher for a closer match; compare the scores of one call "
        "with each other rather than reading them as probabilities. A conch call uses one step."
    )


def conch_result(image: str, square: Box, ranked: Sequence[tuple[str, float]]) -> str:
    """The reply to a conch call: what was scored, then each hypothesis with its score, highest first."""
    lines = [
        f"CONCH scored the central square {square} of {image}. Similarity to each hypothesis, highest first:"
    ]
    lines += [f"{rank}. {score:+.3f}  {text}" for rank, (text, score) in enumerate(ranked, start=1)]
    return "\n".join(lines)


def conch_too_many(sent: int, max_hypotheses: int) -> str:
    return (
        f"Not executed: a conch call takes 1 to {max_hypotheses} hypotheses and you sent {sent}. "
        "Nothing was scored; send fewer."
    )


def conch_failed(reason: str) -> str:
    return f"CONCH could not score the image ({reason}). Crop a region or answer instead."


@register("tool")
class ConchTool(Tool[ConchSettings, ConchAction, ConchRecord]):
    """A loaded CONCH scorer and the most hypotheses one call may send."""

    name = "conch"
    settings = ConchSettings
    action = ConchAction
    record = ConchRecord
    description = (
        "Ask the CONCH pathology image-text model how well each description matches the latest image."
    )
    hints: ClassVar[dict[str, str]] = {
        "hypotheses": "conch: short descriptions to score against the latest image (null for other actions)."
    }
    report_title = "CONCH calls"
    report_note = (
        "the central square of the image the model meant, read from the slide at the model's input "
        "size; cosine similarity, highest first."
    )

    def __init__(self, scorer: Scorer, max_hypotheses: int) -> None:
        self.scorer = scorer
        self.max_hypotheses = max_hypotheses

    @classmethod
    def load(cls, settings: ConchSettings) -> Self:
        from giant.tools.conch.load import load_conch

        return cls(load_conch(settings), settings.max_hypotheses)

    def prompt(self) -> str:
        return conch_prompt(self.max_hypotheses)

    async def run(self, ctx: ToolContext, seen: Seen, action: ConchAction) -> ConchRecord:
        """Score `action.hypotheses` against the central square of the latest image. Raises
        UnusableCall (too many hypotheses, a scorer failure) with the feedback for the model."""
        if len(action.hypotheses) > self.max_hypotheses:
            raise UnusableCall(conch_too_many(len(action.hypotheses), self.max_hypotheses))
        scorer = self.scorer
        started = time.monotonic()
        region = await ctx.slide.aread_region(central_square(seen.box), scorer.input_size, fill=ctx.fill)
        try:
            scores = await asyncio.to_thread(scorer.score, region.image, action.hypotheses)
        except Exception as exc:  # a model failure ends this call, never the episode
            first = (str(exc).splitlines() or [""])[0][:200]
            raise UnusableCall(conch_failed(f"{type(exc).__name__}: {first}")) from exc
        return ConchRecord(
            call_index=seen.call_index,
            tool=self.name,
            model=scorer.label,
            image=seen.image,
            region=region.read,
            input_size=scorer.input_size,
            hypotheses=list(action.hypotheses),
            scores=scores,
            seconds=round(time.monotonic() - started, 4),
        )

    def reply(self, record: ConchRecord) -> str:
        return conch_result(record.image, record.region, record.ranked())

    @classmethod
    def show(cls, action: ConchAction) -> list[str]:
        return list(action.hypotheses)

    @classmethod
    def describe(cls, record: ConchRecord) -> dict[str, Any]:
        return {
            "summary": (
                f"{record.model} scored the central square {record.region} of {record.image} "
                f"({record.input_size}×{record.input_size} px read from the slide) in {record.seconds:.2f} s"
            ),
            "model": record.model,
            "image": record.image,
            "target": f"{record.image} {record.region}",
            "rows": [(f"{score:+.3f}", text) for text, score in record.ranked()],
        }
