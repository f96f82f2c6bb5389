"""Agent settings: what every mode shares, validated once from conf/agent/<mode>.yaml (Hydra).

Each mode has its own settings model (in giant/agent/modes/), built on the bases here, so a run
carries only the settings its mode reads: `agent=giant` has no thumbnail, patch or region fields and
a patch setting never changes a giant run's config hash. `AgentConfig` is the union of every
registered mode's model, told apart by `mode`; `parse_agent` validates a mapping into it.
The models hold types, checks and each setting's role (giant.roles), no defaults: every value is in
conf/ (giant.agent.shipped reads it there for code that runs without Hydra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from giant.roles import Method

Fill = Literal["white", "black"]


class BaseAgentConfig(BaseModel):
    """The settings every mode reads (the episode record, retries, the image encoding, the limits)."""

    model_config = ConfigDict(extra="forbid")

    mode: Method[str]
    max_steps: Method[int] = Field(ge=1, le=100)  # T: provider calls including the answer step
    crop_size: Method[int] = Field(ge=64, le=4096)  # S: long side of every crop and of the overview
    max_retries: Method[int] = Field(ge=1)  # failed calls or unusable actions in a row before the item fails
    jpeg_quality: Method[int] = Field(ge=1, le=100)
    fill: Method[Fill]  # outside-slide/transparent pixels; black = authors'
    item_budget_usd: Method[float | None] = Field(gt=0)
    item_timeout_s: Method[float] = Field(gt=0)

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

    max_images_in_context: Method[int | None] = Field(ge=1)  # None: keep every image (published runs)
    guides: Method[int] = Field(ge=0, le=20)  # axis guide lines per axis


class TissueSampling(BaseModel):
    """Modes that sample random tissue boxes (patch, random_regions)."""

    region_min_tissue: Method[float] = Field(ge=0, le=1)


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


def parse_agent(data: dict[str, Any], provider: str | None = None) -> BaseAgentConfig:
    """Validate a mapping (`mode` picks the model; giant when absent) into its mode's settings, the
    keys it lacks from conf/ with `provider`'s S (None: conf/config.yaml's provider)."""
    from giant.agent import modes

    return modes.parse_agent(data, provider)
