"""The conversation the agent grows step by step, and the view of it each provider call receives.

The full history is kept; `render()` applies `max_images_in_context` N (paper_facts §1): the first
image (the overview) stays, and of the later images at most N-1 are shown; an image no longer shown is
replaced by a short text naming what it showed, so its descriptive text stays in context.

Later images are dropped in blocks, not one per step: when one more would pass N-1, every later image
but the newest is dropped at once, and the next N-2 steps only add to the end. A drop changes the
prompt early on, so the provider's cache misses from there: dropping the oldest image at every step
(the paper's sliding window) would miss at every step past N, while a block drop misses once per N-1
steps (docs/caching-and-tiers.md; benchmarks/cache_billing.py measures both).
"""

from __future__ import annotations

from giant.llm.types import (
    AssistantMessage,
    Conversation,
    ImagePart,
    Message,
    ModelTurn,
    Part,
    TextPart,
    UserMessage,
)


class Context:
    def __init__(self, system: str | None, max_images: int | None = None) -> None:
        self.system = system
        self.max_images = max_images
        self.messages: list[Message] = []

    def add_user(self, parts: list[Part], in_reply_to: str | None = None) -> None:
        self.messages.append(UserMessage(parts=parts, in_reply_to=in_reply_to))

    def add_assistant(self, turn: ModelTurn) -> None:
        # The turn's provider-only state (reasoning items, signed thinking) goes with it: the provider
        # reads it back from the conversation in later requests.
        self.messages.append(
            AssistantMessage(steps=turn.steps, raw_text=turn.raw_text, reasoning=turn.reasoning)
        )

    def append_text(self, text: str) -> None:
        """Add text to the last user message (a forced-answer notice rides on the last crop result,
        so the conversation keeps alternating user and assistant turns)."""
        last = self.messages[-1] if self.messages else None
        if not isinstance(last, UserMessage):
            self.add_user([TextPart(text=text)])
            return
        self.messages[-1] = last.model_copy(update={"parts": [*last.parts, TextPart(text=text)]})

    def render(self) -> Conversation:
        if self.max_images is None:
            return Conversation(system=self.system, messages=list(self.messages))
        positions = [
            (m, p)
            for m, message in enumerate(self.messages)
            if isinstance(message, UserMessage)
            for p, part in enumerate(message.parts)
            if isinstance(part, ImagePart)
        ]
        drop = set(positions[1 : 1 + _dropped(len(positions) - 1, self.max_images - 1)])
        if not drop:
            return Conversation(system=self.system, messages=list(self.messages))
        messages: list[Message] = []
        for m, message in enumerate(self.messages):
            if isinstance(message, UserMessage) and any((m, p) in drop for p in range(len(message.parts))):
                parts: list[Part] = [
                    TextPart(text=f"[image no longer shown: {part.label}]")
                    if isinstance(part, ImagePart) and (m, p) in drop
                    else part
                    for p, part in enumerate(message.parts)
                ]
                message = message.model_copy(update={"parts": parts})
            messages.append(message)
        return Conversation(system=self.system, messages=messages)


def _dropped(later: int, cap: int) -> int:
    """How many of the `later` images (after the overview) are not shown when at most `cap` may be:
    the shown ones run 1, 2, ..., cap, then back to 1 (the newest) at the next image."""
    shown = (later - 1) % cap + 1 if cap and later else 0
    return later - shown
