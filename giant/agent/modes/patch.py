"""Baseline: random level-0 tissue patches, each asked alone; the episode returns the per-patch
answers and eval votes over them (paper_facts §4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from giant.agent.config import BaseAgentConfig, TissueSampling
from giant.agent.modes.base import CallPlan, Mode, register
from giant.roles import Method

if TYPE_CHECKING:
    from giant.agent.episode_state import EpisodeState


class PatchConfig(BaseAgentConfig, TissueSampling):
    mode: Method[Literal["patch"]] = Field(description="The agent mode; picking `agent=<mode>` sets it.")
    patch_count: Method[int] = Field(
        ge=1, description="Random tissue patches, each asked alone; the answers are voted."
    )
    patch_size: Method[int] = Field(
        ge=16, description="Side of a patch in level-0 pixels, shown at this size."
    )


@register
class PatchMode(Mode[PatchConfig]):
    name = "patch"
    settings = PatchConfig
    table_rank = 2

    async def run(self, ep: EpisodeState[PatchConfig]) -> None:
        from giant.agent.baselines import run_patch  # late: it reads slides (OpenSlide, NumPy, SciPy)

        await run_patch(ep)

    def plan(self, cfg: PatchConfig) -> CallPlan:
        return CallPlan(
            calls=cfg.patch_count, image_side=min(cfg.patch_size, cfg.crop_size), conversation=False
        )

    def run_name(self, cfg: PatchConfig, dataset: str) -> str:
        return f"{dataset}-patch-{cfg.patch_count}x{cfg.patch_size}"

    def published_method(self, runs_per_item: int, settings: Mapping[str, int | None]) -> str | None:
        if runs_per_item == 1 and (settings.get("patch_count"), settings.get("patch_size")) == (30, 224):
            return "Patch (30 x 224, vote)"
        return None
