"""Agent settings: what every mode shares, validated once from conf/agent/<mode>.yaml (Hydra).

Each mode has its own settings model (in giant/agent/modes/), built on the bases here, so a run
carries only the settings its mode reads: `agent=giant` has no thumbnail, patch or region fields and
a patch setting never changes a giant run's config hash. `AgentConfig` is the union of every
registered mode's model, told apart by `mode`; `parse_agent` validates a mapping into it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Fill = Literal["white", "black"]


class BaseAgentConfig(BaseModel):
    """The settings every mode reads (the episode record, retries, the image encoding, the limits)."""

    model_config = ConfigDict(extra="forbid")

    mode: str
    max_steps: int = Field(20, ge=1, le=100)  # T: provider calls including the answer step
    crop_size: int = Field(1000, ge=64, le=4096)  # S: long side of every crop and of the overview
    max_retries: int = Field(3, ge=1)  # consecutive failed calls or unusable actions before the item fails
    jpeg_quality: int = Field(75, ge=1, le=100)
    fill: Fill = "white"  # outside-slide/transparent pixels; black = authors'
    item_budget_usd: float | None = Field(None, gt=0)
    item_timeout_s: float = Field(900.0, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _other_modes_setting(cls, data: Any) -> Any:
        """A setting of another mode (`agent.patch_count` on a giant run) names the modes that have it,
        instead of pydantic's "extra inputs are not permitted"."""
        if isinstance(data, dict):
            from giant.agent.modes import modes_with_setting

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

    max_images_in_context: int | None = Field(None, ge=1)  # None: keep every image (published runs)
    guides: int = Field(4, ge=0, le=20)  # axis guide lines per axis


class TissueSampling(BaseModel):
    """Modes that sample random tissue boxes (patch, random_regions)."""

    region_min_tissue: float = Field(0.25, ge=0, le=1)


if TYPE_CHECKING:
    # Code outside a mode sees only the shared settings: a mode's own fields are its business.
    AgentConfig = BaseAgentConfig
else:

    def __getattr__(name: str) -> Any:
        """`AgentConfig` is built from the mode registry, which imports the bases above."""
        if name == "AgentConfig":
            from giant.agent import modes

            return modes.AgentConfig
        raise AttributeError(f"module 'giant.agent.config' has no attribute {name!r}")


def parse_agent(data: dict[str, Any]) -> BaseAgentConfig:
    """Validate a mapping (`mode` picks the model; giant when absent) into its mode's settings."""
    from giant.agent import modes

    return modes.parse_agent(data)
