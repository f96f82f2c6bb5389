"""The three readings of Algorithm 1 (giant, paper, authors): one navigation loop, told apart only by
their `NavigationRules` and the pacing line of their system prompt (giant/agent/loop.py runs them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, TypeVar

from pydantic import Field

from giant.agent import instructions
from giant.agent.config import NavigationConfig, NavigationRules
from giant.agent.modes.base import Mode, SettingValue
from giant.registry import register
from giant.roles import Method

if TYPE_CHECKING:
    from giant.agent.episode_state import EpisodeState


class GiantConfig(NavigationConfig):
    mode: Method[Literal["giant"]] = Field(description="The agent mode; picking `agent=<mode>` sets it.")


class PaperConfig(NavigationConfig):
    mode: Method[Literal["paper"]] = Field(description="The agent mode; picking `agent=<mode>` sets it.")


class AuthorsConfig(NavigationConfig):
    mode: Method[Literal["authors"]] = Field(description="The agent mode; picking `agent=<mode>` sets it.")
    max_restarts: Method[int] = Field(
        ge=0, description="Restarts of a whole episode after T calls without an answer."
    )


N = TypeVar("N", bound=NavigationConfig)


class NavigationMode(Mode[N]):
    table_rank = 10
    row_settings = ("max_steps", "crop_size")

    def rules(self, cfg: N) -> NavigationRules:
        raise NotImplementedError

    def pacing(self, t: int) -> str:
        """The system prompt's line on how to spend the T steps."""
        return instructions.free_pacing()

    def system_prompt(self, cfg: N, width: int, height: int) -> str:
        return instructions.system_prompt(cfg, width, height, pacing=self.pacing(cfg.max_steps))

    async def run(self, ep: EpisodeState[N]) -> None:
        from giant.agent.loop import Navigator  # late: the loop reads slides (OpenSlide, NumPy, SciPy)

        await Navigator(ep, self.rules(ep.cfg), self.system_prompt(ep.cfg, ep.width, ep.height)).run()

    def published_method(self, runs_per_item: int, settings: Mapping[str, SettingValue]) -> str | None:
        """Every published GIANT run used T=20, S=1000 (one run per item, or a vote over five)."""
        if settings.get("max_steps") != 20 or settings.get("crop_size") != 1000:
            return None
        return {1: "GIANT x1 (T=20, S=1000)", 5: "GIANT x5 (vote)"}.get(runs_per_item)


@register("mode")
class GiantMode(NavigationMode[GiantConfig]):
    """Practical: early answers accepted; at step T the model must answer."""

    name = "giant"
    settings = GiantConfig
    table_rank = 11

    def rules(self, cfg: GiantConfig) -> NavigationRules:
        return NavigationRules(early_answer="accept", force_answer=True, attempts=1, budget="actions")


@register("mode")
class PaperMode(NavigationMode[PaperConfig]):
    """Fixed iterations: exactly T-1 crops, the answer at step T; early answers are rejected."""

    name = "paper"
    settings = PaperConfig
    table_rank = 12

    def rules(self, cfg: PaperConfig) -> NavigationRules:
        return NavigationRules(early_answer="reject", force_answer=True, attempts=1, budget="actions")

    def pacing(self, t: int) -> str:
        return instructions.fixed_pacing(t)


@register("mode")
class AuthorsMode(NavigationMode[AuthorsConfig]):
    """The authors' code: no forced answer; T answered calls without an answer restart the episode."""

    name = "authors"
    settings = AuthorsConfig
    table_rank = 13

    def rules(self, cfg: AuthorsConfig) -> NavigationRules:
        return NavigationRules(
            early_answer="accept", force_answer=False, attempts=cfg.max_restarts + 1, budget="calls"
        )

    def pacing(self, t: int) -> str:
        return instructions.authors_pacing(t)
