"""The mode contract and its registry: everything outside giant/agent/modes/ asks a mode object.

A mode is one `Mode` subclass with `@register("mode")` (giant.registry): its name, its settings model,
how it runs an episode, what an item costs (the dry run), and how it names itself in run names, Table 1
rows and the published numbers. Nothing else in the project branches on a mode's name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from giant import registry
from giant.agent.config import BaseAgentConfig, modes_with_setting

if TYPE_CHECKING:
    from giant.agent.episode_state import EpisodeState

C = TypeVar("C", bound=BaseAgentConfig)
# A logged agent setting as the tables read it back (MLflow params): a count, a size, a µm/px, a choice.
SettingValue = int | float | str | None


@dataclass(frozen=True)
class CallPlan:
    """What one item-run sends, for the dry run's cost estimate."""

    calls: int  # provider calls
    image_side: int  # long side of every image sent
    conversation: bool  # True: each call resends the conversation so far (its images and replies)
    images_per_call: int = 1  # images of one call besides the conversation's (patch mode's joint call: N)
    concurrent: bool = False  # True: the calls are sent side by side (patch mode's vote), not in turn


class Mode(Generic[C]):
    """One way of running an episode. Subclasses set the class attributes and `run`."""

    name: ClassVar[str]
    settings: ClassVar[type[BaseAgentConfig]]  # the mode's own pydantic model, `mode: Literal[name]`
    table_rank: ClassVar[int] = 100  # row order in Table 1 (the paper: baselines first)
    # The agent settings (MLflow params `agent.<name>`) that make two runs different Table 1 rows.
    row_settings: ClassVar[tuple[str, ...]] = ()

    async def run(self, ep: EpisodeState[C]) -> None:
        """Run the episode: record calls and regions in ep, end with ep.answered or EpisodeEnd."""
        raise NotImplementedError

    def plan(self, cfg: C) -> CallPlan:
        """Default: a navigation conversation of T calls with S-pixel images."""
        return CallPlan(calls=cfg.max_steps, image_side=cfg.crop_size, conversation=True)

    def system_prompt(self, cfg: C, width: int, height: int) -> str | None:
        """The system prompt on a slide of this size (None: the mode sends none)."""
        return None

    def run_name(self, cfg: C, dataset: str) -> str:
        """e.g. tcga-giant-T20-S1000, and the tools a run enables: tcga-giant-T20-S1000-cells+caption."""
        tools = getattr(cfg, "tools", ())
        return f"{dataset}-{self.name}-T{cfg.max_steps}-S{cfg.crop_size}" + (
            "-" + "+".join(tools) if tools else ""
        )

    def row_detail(self, setting: str, value: SettingValue) -> str:
        """How a row label shows one of `row_settings` when it varies within the mode."""
        short = {"max_steps": "T", "crop_size": "S"}.get(setting, setting)
        return f"{short}={value}"

    def study_cell(self, settings: Mapping[str, SettingValue]) -> bool:
        """Whether a run with these logged settings is a cell of the patch-design study (arXiv
        2606.12407), which the tables set beside the study's published rows."""
        return False

    def published_method(self, runs_per_item: int, settings: Mapping[str, SettingValue]) -> str | None:
        """The Table 1 method (giant.tracking.published) a run with these agent settings reproduces.
        `runs_per_item` is the table record's: 1 for a one-run job and for the per-run mean of a
        k-run job (its "x1" record, giant.tracking.tables.load), k for that job's vote."""
        return None


# Every registered mode by name (giant.registry: reading it imports every module of giant/agent/modes/).
MODES: Mapping[str, Mode[Any]] = registry.members("mode")


def mode_of(cfg: BaseAgentConfig) -> Mode[Any]:
    return MODES[cfg.mode]


def find_mode(name: str) -> Mode[Any] | None:
    """The mode of a logged run (None: a name no registered mode has, e.g. a retired one)."""
    return MODES.get(name)


__all__ = [
    "MODES",
    "CallPlan",
    "Mode",
    "SettingValue",
    "find_mode",
    "mode_of",
    "modes_with_setting",
]
