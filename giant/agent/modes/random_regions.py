"""Ablation: the model cannot choose. T-1 random square tissue regions follow the overview, each with
its guides and box text, then one answer call (paper_facts §4)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from giant.agent import instructions
from giant.agent.config import RegionsConfig, TissueSampling
from giant.agent.modes.base import Mode
from giant.registry import register
from giant.roles import Method

if TYPE_CHECKING:
    from giant.agent.episode_state import EpisodeState


class RandomRegionsConfig(RegionsConfig, TissueSampling):
    mode: Method[Literal["random_regions"]] = Field(
        description="The agent mode; picking `agent=<mode>` sets it."
    )
    region_min_side: Method[int] = Field(
        ge=16, description="Smallest side of a random region (side ~ U[min, max])."
    )
    region_max_side: Method[int | None] = Field(
        description="Largest side of a random region; null: the slide's short side."
    )

    @model_validator(mode="after")
    def _sides_in_order(self) -> RandomRegionsConfig:
        if self.region_max_side is not None and self.region_max_side < self.region_min_side:
            raise ValueError(
                f"agent.region_max_side={self.region_max_side} is below agent.region_min_side="
                f"{self.region_min_side}; raise it or set it to null"
            )
        return self


@register("mode")
class RandomRegionsMode(Mode[RandomRegionsConfig]):
    name = "random_regions"
    settings = RandomRegionsConfig
    table_rank = 3
    row_settings = ("max_steps", "crop_size")

    async def run(self, ep: EpisodeState[RandomRegionsConfig]) -> None:
        # late: the runner reads slides (OpenSlide, NumPy, SciPy)
        from giant.agent.baselines import run_random_regions

        await run_random_regions(ep)

    def system_prompt(self, cfg: RandomRegionsConfig, width: int, height: int) -> str:
        return instructions.random_regions_system_prompt(cfg, width, height, cfg.max_steps - 1)
