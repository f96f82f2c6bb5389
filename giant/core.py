"""The types every layer shares, at the bottom of the import graph: `wsi`, `data`, `llm`, `agent`, `eval`
and `tracking` import from here, and this module imports nothing of giant's.

A box of level-0 pixels, an encoded image, the shape of a valid answer, one benchmark question and the
way an episode ended are facts that cross layers; keeping them here means a slide reader never
imports a provider module and a dataset loader never imports the agent.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Box(BaseModel):
    """A rectangle in level-0 pixels: (x, y) is the top-left corner, x grows right, y grows down."""

    model_config = ConfigDict(frozen=True)

    x: int
    y: int
    w: int
    h: int

    @property
    def right(self) -> int:
        return self.x + self.w

    @property
    def bottom(self) -> int:
        return self.y + self.h

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self.x, self.y, self.w, self.h)

    def __str__(self) -> str:
        return f"(x={self.x}, y={self.y}, w={self.w}, h={self.h})"


class EncodedImage(BaseModel):
    """An image ready for a provider: base64 JPEG plus what we need to audit it without the bytes."""

    model_config = ConfigDict(frozen=True)
    data_b64: str = Field(repr=False)
    media_type: str = "image/jpeg"
    sha256: str
    width: int
    height: int


class AnswerSpace(BaseModel):
    """What a valid answer looks like for the item: used by the random provider and answer prompts."""

    kind: Literal["option", "grade"]
    n_options: int = 0  # option: answers are 1..n_options; grade: answers are 0..5 (ISUP)


class Item(BaseModel):
    """One benchmark question, the unit every later stage (agent, runner, scorer) works on."""

    model_config = ConfigDict(frozen=True)

    benchmark: str  # benchmark_name: tcga, gtex, panda, tcga_slidebench, tcga_expert_vqa, demo_*
    benchmark_id: str
    image_path: str  # relative to the WSI root, as in the CSV
    prompt: str  # fully rendered question text sent to the model
    options: tuple[str, ...] = ()  # empty for panda
    truth: int  # canonical label: 1-based option index, or ISUP grade 0..5 for panda
    metric: str  # a registered metric's name (giant.eval.metrics), checked by the loader
    file_id: str = ""

    @property
    def key(self) -> str:
        """Questions are keyed by (benchmark_name, benchmark_id): several share a slide."""
        return f"{self.benchmark}/{self.benchmark_id}"

    @property
    def answer_space(self) -> AnswerSpace:
        if self.options:
            return AnswerSpace(kind="option", n_options=len(self.options))
        return AnswerSpace(kind="grade", n_options=6)


# How an episode ended: every trajectory and every results.jsonl line carries one.
Status = Literal[
    "answered",
    "step_limit_exceeded",
    "early_answer_rejected",
    "retries_exhausted",
    "budget_exceeded",
    "timeout",
    "slide_error",
    "slide_missing",
    "provider_error",
    "context_exceeded",  # the conversation outgrew the model's context window (an open model's max_model_len)
]

# Why an item-run could not measure the model: something the user fixes (a slide, the key, the model
# name, the quota, the network or server, a request too large for the model), never the model's answer.
# An item-run with a cause is not a measurement: the runner stops on the fatal ones and counts the
# rest for its circuit breaker, and a rerun after the fix retries them (giant.eval.causes).
SetupCause = Literal[
    "slide_missing",
    "slide_unreadable",
    "key",
    "model_name",
    "quota",
    "network",
    "rate_limit",
    "server",
    "context",
    "bad_request",
    "flex_capacity",  # OpenAI flex processing out of capacity (its own 429): wait, or fall back to standard
    "flex_unsupported",  # the model does not take provider.service_tier=flex (a 400)
    "image_limit",  # the server takes fewer images per prompt than the agent sends (vLLM's 400)
    "timeout",  # the item timeout cut a call the server had not answered (a hung server)
    "bug",  # an exception nothing classified (giant's bug, or an SDK's): its traceback is in errors.log
]

# The causes worth asking again after a pause (giant.llm.retry); the others fail the same way each time.
TRANSIENT_CAUSES: frozenset[SetupCause] = frozenset({"network", "rate_limit", "server", "flex_capacity"})
