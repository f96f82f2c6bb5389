"""The conch action inside an episode: read the region again from the slide at the scorer's input
size, score the hypotheses, record the call, and word the reply (highest score first).

The region is re-read rather than taken from the JPEG the model saw: the scorer then gets the slide's
own pixels at its own resolution (no second compression, no resize of a resize). Like CONCH's own
preprocessing (short side to the input size, then the central square), the scorer sees the central
square of the region, read directly at input_size x input_size pixels.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from giant.agent import instructions
from giant.agent.trajectory import ToolCall
from giant.core import Box
from giant.llm.types import ConchAction
from giant.tools.registry import active

if TYPE_CHECKING:
    from giant.agent.episode_state import EpisodeState


class UnusableCall(Exception):
    """A tool call that cannot be executed; `feedback` goes back to the model."""

    def __init__(self, feedback: str) -> None:
        super().__init__(feedback)
        self.feedback = feedback


def central_square(box: Box) -> Box:
    """The largest square centred in `box` (what a short-side resize and centre crop would keep)."""
    side = min(box.w, box.h)
    return Box(x=box.x + (box.w - side) // 2, y=box.y + (box.h - side) // 2, w=side, h=side)


async def score_hypotheses(
    ep: EpisodeState[Any], call_index: int, image: str, box: Box, action: ConchAction
) -> str:
    """Score `action.hypotheses` against the central square of `box`; the reply text. Raises
    UnusableCall (too many hypotheses, a scorer failure) with the feedback for the model."""
    tool = active("conch")
    if len(action.hypotheses) > tool.max_hypotheses:
        raise UnusableCall(instructions.conch_too_many(len(action.hypotheses), tool.max_hypotheses))
    scorer = tool.scorer
    started = time.monotonic()
    region = await ep.slide.aread_region(central_square(box), scorer.input_size, fill=ep.cfg.fill)
    try:
        scores = await asyncio.to_thread(scorer.score, region.image, action.hypotheses)
    except Exception as exc:  # a model failure ends this call, never the episode
        first = (str(exc).splitlines() or [""])[0][:200]
        raise UnusableCall(instructions.conch_failed(f"{type(exc).__name__}: {first}")) from exc
    record = ToolCall(
        call_index=call_index,
        tool="conch",
        model=scorer.label,
        image=image,
        region=region.read,
        input_size=scorer.input_size,
        hypotheses=list(action.hypotheses),
        scores=scores,
        seconds=round(time.monotonic() - started, 4),
    )
    ep.traj.tool_calls.append(record)
    return instructions.conch_result(image, region.read, record.ranked())
