"""The record of one episode: every provider call, every region read, the answer and its status.

Images are stored once as JPEG files beside the JSON, named by content hash, so a trajectory folder
is small and can be rendered later (giant.tracking.viewer).
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import BaseModel, Field, SerializeAsAny

from giant.core import Box, SetupCause, Status
from giant.llm.types import ProviderError, Step, TokenCounts, Usage
from giant.tagged import tagged
from giant.tools import ToolRecord
from giant.tools.registry import record_models

# One executed tool call (giant.tools): its tool's record model, told apart by the tool's name.
ToolCall = Annotated[SerializeAsAny[ToolRecord], tagged("tool", record_models)]

# How a call failed: a provider error's kind, or the item timeout cutting a call in flight.
ErrorKind = Literal["transient", "parse", "refusal", "fatal", "timeout", "provider_error"]
ERROR_KINDS: tuple[ErrorKind, ...] = get_args(ErrorKind)


def error_kind(exc: ProviderError) -> ErrorKind:
    """The record's kind of a provider error (an unlisted kind is the generic provider_error)."""
    return next((kind for kind in ERROR_KINDS if kind == exc.kind), "provider_error")


class Navigation(BaseModel):
    """One item-run's navigation (the field names are also the summary's and MLflow's, `nav_` prefixed).
    None where a value cannot be known: no crop, no slide mpp, no tissue mask, no annotations."""

    steps: int = 0  # actions executed (crops, notes, the answer)
    crops: int = 0  # regions shown after the overview
    finest_mpp: float | None = None  # the finest µm/px of any crop
    median_mpp: float | None = None  # the median µm/px over the crops
    tissue: float | None = None  # mean tissue fraction of the crops
    coverage: float | None = None  # share of the slide's tissue shown at or finer than coverage_mpp
    coverage_mpp: float | None = None  # the threshold `coverage` was measured with
    revisits: float | None = None  # share of the crops' area already shown at the same or finer scale
    first_fine_step: int | None = None  # the first crop (1-based) at or finer than FINE_MPP
    crop_mpp: list[float | None] = []  # each crop's µm/px, in order (the report's µm/px by step)
    # Evidence (annotations): None = the slide has no annotations ("not annotated", never a miss)
    hit: bool | None = None  # a crop at or finer than hit_mpp on target
    first_hit_step: int | None = None  # the first such crop (1-based)
    on_target: float | None = None  # share of the crops (any µm/px) on target
    hit_steps: list[bool] | None = None  # per crop: a hit so far (the report's hit rate by step)

    @property
    def annotated(self) -> bool:
        return self.hit is not None


class Call(BaseModel):
    """One provider call: the steps it returned, or the error it raised."""

    index: int  # 1-based within the episode (restarts continue the count)
    attempt: int = 0  # authors mode: which restart this call belongs to
    steps: list[Step] = Field(default_factory=list)
    error_kind: ErrorKind | None = None
    error: str | None = None
    cause: SetupCause | None = None  # a failed call's setup cause (key, quota, server, ...), if any
    raw_text: str = ""
    decode_note: str | None = None  # what the decoder passed over in raw_text (chatter, a repeat, ...)
    usage: Usage = Field(default_factory=Usage)
    feedback: str | None = None  # corrective / error-feedback message sent after this call


class Region(BaseModel):
    """A region actually read from the slide."""

    call_index: int  # the call that asked for it (0 = the step-0 overview)
    requested: Box
    read: Box  # after clamping to the slide
    level: int
    output_width: int
    output_height: int
    image: str  # file name of the JPEG beside trajectory.json ("<sha256>.jpg")
    clamped: bool = False
    # Tissue fraction of `read` on the slide's CROP_MASK_SIDE mask (giant.wsi.tissue), recorded while the
    # slide is open; None for the overview, an unreadable mask, and trajectories written before it was.
    tissue_fraction: float | None = None
    # Microns per pixel of the image as the model saw it (giant.wsi.magnification.shown_mpp); None when
    # the slide does not say, and in trajectories written before it was recorded.
    mpp: float | None = None


class PatchesPlaced(BaseModel):
    """How patch mode placed its patches (the boxes themselves are the trajectory's regions)."""

    requested: int  # agent.patch_count
    sent: int  # patches placed and shown; fewer than requested when the rest did not fit the tissue
    level0_side: int  # side of each patch's box in level-0 pixels (patch_size at level 0)
    placement: str  # agent.patch_placement
    # A thumbnail of the slide for the trajectory page only (never sent to the model), the boxes
    # drawn on it; None where it could not be made.
    map: Region | None = None


class TrajectoryTotals(TokenCounts):
    """One episode's sums (eval's `Totals` sums a whole job)."""

    calls: int = 0
    steps: int = 0  # actions executed (crops, notes, the answer); failed calls are not steps
    crops: int = 0
    cost_usd: float | None = 0.0  # None when any call's cost was unknown
    seconds: float = 0.0


class Trajectory(BaseModel):
    item_key: str
    run_index: int = 0
    mode: str  # a registered mode's name (giant.agent.modes); open, so a new mode edits nothing here
    max_steps: int
    crop_size: int
    provider: str = ""
    model: str = ""
    slide_path: str = ""
    slide_width: int = 0
    slide_height: int = 0
    # microns per level-0 pixel (OpenSlide's mpp-x); None when the slide does not say. The run report
    # turns it into the magnification of each crop, which the boxes alone cannot give.
    slide_mpp: float | None = None
    question: str = ""
    system_prompt: str | None = None
    calls: list[Call] = Field(default_factory=list)
    regions: list[Region] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    answer: str | None = None  # the model's final answer text (task part from <response> if present)
    # patch mode: each patch's answer text in patch order (None: that patch got no answer); the
    # agent never scores, eval extracts and votes over these with the run's settings
    patch_answers: list[str | None] | None = None
    patches: PatchesPlaced | None = None  # patch mode: how many patches were asked for and sent
    status: Status = "provider_error"
    reason: str = ""
    restarts: int = 0
    corrections: int = 0  # corrective messages sent after rule violations (at most agent.max_corrections)
    totals: TrajectoryTotals = Field(default_factory=TrajectoryTotals)
    # Where the model looked (giant.record.navigation), made while the slide was open; None before it was
    navigation: Navigation | None = None
