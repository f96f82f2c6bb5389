"""Agent settings: what every mode shares, validated once from conf/agent/<mode>.yaml (Hydra).

Each mode has its own settings model (in giant/agent/modes/), built on the bases here, so a run
carries only the settings its mode reads: `agent=giant` has no thumbnail, patch or region fields and
a patch setting never changes a giant run's config hash. `AgentConfig` (giant.agent.modes) is the
union of every registered mode's model, told apart by `mode`; `giant.agent.modes.parse_agent`
validates a mapping into it. The settings and rules several modes share live here, below the modes and
the loops that run them (giant.agent.loop, giant.agent.baselines), so neither imports the other's.
The models hold types, checks and each setting's role (giant.roles), no defaults: every value is in
conf/ (giant.agent.shipped reads it there for code that runs without Hydra).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from giant.agent.wording import check_folder
from giant.registry import owners
from giant.roles import Method
from giant.tools.registry import ToolName

Fill = Literal["white", "black"]


class BaseAgentConfig(BaseModel):
    """The settings every mode reads (the episode record, retries, the image encoding, the limits)."""

    model_config = ConfigDict(extra="forbid")

    mode: Method[str] = Field(description="The agent mode; picking `agent=<mode>` sets it.")
    max_steps: Method[int] = Field(
        ge=1, le=100, description="T: provider calls per episode, the answer step included."
    )
    crop_size: Method[int] = Field(
        ge=64,
        le=4096,
        description="S: long side in pixels of the overview and of every crop (follows provider.crop_size).",
    )
    max_retries: Method[int] = Field(
        ge=1,
        description="Failed calls (unparseable, refused) or unusable actions in a row before the item fails.",
    )
    jpeg_quality: Method[int] = Field(ge=1, le=100, description="JPEG quality of every image sent.")
    fill: Method[Fill] = Field(
        description="Colour of outside-slide and transparent pixels (black: the authors' code)."
    )
    item_budget_usd: Method[float | None] = Field(
        gt=0,
        description="Dollar cap per item, checked before each call: forces the answer while one call fits.",
    )
    item_timeout_s: Method[float] = Field(gt=0, description="Wall-clock limit of one item-run in seconds.")
    prompts: Method[Path | None] = Field(
        description="A folder of Jinja2 templates replacing the shipped wording (giant/agent/prompts/); "
        "null: the shipped wording. Their digest is part of the config hash."
    )

    @field_validator("prompts")
    @classmethod
    def _usable_templates(cls, folder: Path | None) -> Path | None:
        """Every template readable, known by name, and using the fields the loop relies on."""
        return None if folder is None else check_folder(folder)

    @model_validator(mode="before")
    @classmethod
    def _other_modes_setting(cls, data: Any) -> Any:
        """A setting of another mode (`agent.patch_count` on a giant run) names the modes that have it,
        instead of pydantic's "extra inputs are not permitted"."""
        if isinstance(data, dict):
            for key in data:
                owners = [] if key in cls.model_fields else modes_with_setting(str(key))
                if owners:
                    raise ValueError(
                        f"agent.{key} is a setting of agent={','.join(owners)} only, not of "
                        f"agent={data.get('mode')}: pick one of those agent options or drop the key"
                    )
        return data


class RegionsConfig(BaseAgentConfig):
    """Modes that show regions with axis guides in one growing conversation."""

    max_images_in_context: Method[int | None] = Field(
        ge=1,
        description="N: keep the overview and the N-1 newest images in the conversation; null keeps all.",
    )
    guides: Method[int] = Field(ge=0, le=20, description="Axis guide lines drawn per axis on each image.")


class TissueSampling(BaseModel):
    """Modes that sample random tissue boxes (patch, random_regions)."""

    region_min_tissue: Method[float] = Field(
        ge=0, le=1, description="Tissue fraction a sampled patch or region must hold."
    )


class NavigationConfig(RegionsConfig):
    """The settings of the navigation loop, shared by giant, paper and authors."""

    note_tool: Method[bool] = Field(description="Offer the authors' optional note tool.")
    # The paper's Table 3 tools, e.g. [conch] (giant.tools; their settings under tools.<name>).
    tools: Method[list[ToolName]] = Field(
        description="Tools the model may consult besides cropping (settings under `tools.<name>`)."
    )
    strict_crops: Method[bool] = Field(
        description="true: invalid boxes are fed back as errors instead of clamped to the slide."
    )
    # The paper's "3 retries" (loop.py docstring).
    max_corrections: Method[int] = Field(
        ge=0,
        description="Corrective messages after rule violations (a crop at step T; paper: an early "
        "answer); the next violation fails the item.",
    )


@dataclass(frozen=True)
class NavigationRules:
    """How one reading of Algorithm 1 treats the step budget T (each navigation mode gives its own)."""

    early_answer: Literal["accept", "reject"]  # reject: an answer before step T gets a corrective
    force_answer: bool  # at step T the model must answer (else the attempt ends without one)
    attempts: int  # whole episodes from the overview on (1 + restarts)
    budget: Literal["actions", "calls"]  # what T counts: executed crops/notes, or answered calls


def modes_with_setting(setting: str) -> list[str]:
    """The modes whose settings include `setting` (for the one-line error on another mode's key)."""
    return sorted(owners("mode", setting))
