"""Baseline: one call with a thumbnail of the whole slide, no guides, no system prompt (paper_facts §4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from giant.agent.config import BaseAgentConfig
from giant.agent.modes.base import CallPlan, Mode, SettingValue
from giant.registry import register
from giant.roles import Method

if TYPE_CHECKING:
    from giant.agent.episode_state import EpisodeState


class ThumbnailConfig(BaseAgentConfig):
    mode: Method[Literal["thumbnail"]] = Field(description="The agent mode; picking `agent=<mode>` sets it.")
    thumbnail_size: Method[int] = Field(ge=250, le=4000, description="Long side of the thumbnail in pixels.")


@register("mode")
class ThumbnailMode(Mode[ThumbnailConfig]):
    name = "thumbnail"
    settings = ThumbnailConfig
    table_rank = 1
    row_settings = ("thumbnail_size",)

    async def run(self, ep: EpisodeState[ThumbnailConfig]) -> None:
        from giant.agent.baselines import run_thumbnail  # late: it reads slides (OpenSlide, NumPy, SciPy)

        await run_thumbnail(ep)

    def plan(self, cfg: ThumbnailConfig) -> CallPlan:
        return CallPlan(calls=1, image_side=cfg.thumbnail_size, conversation=False)

    def run_name(self, cfg: ThumbnailConfig, dataset: str) -> str:
        return f"{dataset}-thumbnail-{cfg.thumbnail_size}px"

    def row_detail(self, setting: str, value: SettingValue) -> str:
        return f"{value} px"

    def published_method(self, runs_per_item: int, settings: Mapping[str, SettingValue]) -> str | None:
        if runs_per_item == 1 and settings.get("thumbnail_size") == 1024:
            return "Thumbnail 1024 px"
        return None
