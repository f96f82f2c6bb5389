"""Agent settings, validated once from conf/agent/*.yaml (Hydra) into this model."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

AgentMode = Literal["giant", "paper", "authors", "thumbnail", "patch", "random_regions"]


class AgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: AgentMode = "giant"
    max_steps: int = Field(20, ge=1, le=100)  # T: provider calls including the answer step
    crop_size: int = Field(1000, ge=64, le=4096)  # S: long side of every crop and of the overview
    max_images_in_context: int | None = Field(None, ge=1)  # None: keep every image (published runs)
    note_tool: bool = False
    strict_crops: bool = False  # True: invalid boxes are fed back as errors instead of clamped
    max_retries: int = Field(3, ge=1)  # consecutive failed calls or unusable actions before the item fails
    # Corrective messages after rule violations (a crop when the answer is due; an early answer in
    # paper mode); the next violation fails the item. The paper's "3 retries" (loop.py docstring).
    max_corrections: int = Field(3, ge=0)
    max_restarts: int = Field(3, ge=0)  # authors mode: restarts of a whole episode
    jpeg_quality: int = Field(75, ge=1, le=100)
    guides: int = Field(4, ge=0, le=20)  # axis guide lines per axis
    fill: Literal["white", "black"] = "white"  # outside-slide/transparent pixels; black = authors'
    item_budget_usd: float | None = Field(None, gt=0)
    item_timeout_s: float = Field(900.0, gt=0)
    thumbnail_size: int = Field(1024, ge=250, le=4000)  # thumbnail mode only
    patch_count: int = Field(30, ge=1)  # patch mode only
    patch_size: int = Field(224, ge=16)  # patch mode only, level-0 pixels
    region_min_side: int = Field(1000, ge=16)  # random_regions mode: side ~ U[min, bound]
    region_max_side: int | None = None  # None: the slide's short side
    region_min_tissue: float = Field(0.25, ge=0, le=1)
