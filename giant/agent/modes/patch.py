"""Baseline: random tissue patches without an agent (paper_facts §4), grown into the patch-design
study's four axes (arXiv 2606.12407): how the patches are asked (`inference`: each alone and the
answers voted, or all jointly in one call), their side (`patch_size`), the magnification they are
read at (`patch_mpp`, microns per pixel; null: level 0) and how many (`patch_count`), plus how they
are placed (`patch_placement`).

The settings the study added are recorded and hashed only away from today's values (vote, level 0,
fill): the shipped `agent=patch` keeps the config hash, run name and ledger keys of the runs paid
before the study existed (tests/config/test_roles.py pins them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, SerializationInfo, SerializerFunctionWrapHandler, model_serializer

from giant.agent.config import BaseAgentConfig, TissueSampling
from giant.agent.modes.base import CallPlan, Mode, SettingValue
from giant.registry import register
from giant.roles import Method, recording
from giant.wsi.magnification import mpp_text

if TYPE_CHECKING:
    from giant.agent.episode_state import EpisodeState

Inference = Literal["vote", "joint"]
Placement = Literal["fill", "distinct"]
# The study's settings at the values every patch run had before it: left out of the record and the
# hash there, so those runs resume and replay under the same keys.
BEFORE_THE_STUDY: dict[str, object] = {"inference": "vote", "patch_mpp": None, "patch_placement": "fill"}


class PatchConfig(BaseAgentConfig, TissueSampling):
    mode: Method[Literal["patch"]] = Field(description="The agent mode; picking `agent=<mode>` sets it.")
    patch_count: Method[int] = Field(
        ge=1, description="Random tissue patches sampled per item-run (fewer are sent when they do not fit)."
    )
    patch_size: Method[int] = Field(
        ge=16,
        description="Side of a patch in pixels as the model sees it (level-0 pixels at patch_mpp=null).",
    )
    inference: Method[Inference] = Field(
        description="vote: each patch asked alone, the answers voted; "
        "joint: all patches in one call, one answer."
    )
    patch_mpp: Method[float | None] = Field(
        gt=0,
        description="Microns per pixel the patches are shown at (0.5 ~ 20x, 2.0 ~ 5x), read at the best "
        "level and resampled; null: level 0 (needs no mpp).",
    )
    patch_placement: Method[Placement] = Field(
        description="fill: patches short of region_min_tissue are filled with the best others (may "
        "overlap); distinct: only non-overlapping tissue patches, the rest are not sent (recorded)."
    )

    @model_serializer(mode="wrap")
    def _recorded(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        """In the record and the hash, without the study's settings where they hold the values of
        the runs before it (BEFORE_THE_STUDY)."""
        data = handler(self)
        if isinstance(data, dict) and recording(info.context):
            for key, value in BEFORE_THE_STUDY.items():
                if data.get(key, value) == value:
                    data.pop(key, None)
        return data

    @property
    def images_per_call(self) -> int:
        return self.patch_count if self.inference == "joint" else 1


@register("mode")
class PatchMode(Mode[PatchConfig]):
    name = "patch"
    settings = PatchConfig
    table_rank = 2
    row_settings = ("inference", "patch_count", "patch_size", "patch_mpp")

    async def run(self, ep: EpisodeState[PatchConfig]) -> None:
        from giant.agent.baselines import run_patch  # late: it reads slides (OpenSlide, NumPy, SciPy)

        await run_patch(ep)

    def plan(self, cfg: PatchConfig) -> CallPlan:
        side = min(cfg.patch_size, cfg.crop_size) if cfg.patch_mpp is None else cfg.patch_size
        if cfg.inference == "joint":
            return CallPlan(calls=1, image_side=side, conversation=False, images_per_call=cfg.patch_count)
        # the vote asks every patch at once (giant.agent.baselines._vote): one call's wait, not N
        return CallPlan(calls=cfg.patch_count, image_side=side, conversation=False, concurrent=True)

    def run_name(self, cfg: PatchConfig, dataset: str) -> str:
        name = f"{dataset}-patch-{cfg.patch_count}x{cfg.patch_size}"
        if cfg.patch_mpp is not None:
            name += f"-{cfg.patch_mpp:g}mpp"
        if cfg.inference == "joint":
            name += "-joint"
        if cfg.patch_placement == "distinct":
            name += "-distinct"
        return name

    def row_detail(self, setting: str, value: SettingValue) -> str:
        if setting == "patch_mpp":
            return "level 0" if value in (None, "None", "") else mpp_text(float(value))
        if setting == "inference":
            return "vote" if value in (None, "None", "") else str(value)
        return super().row_detail(setting, value)

    def study_cell(self, settings: Mapping[str, SettingValue]) -> bool:
        """A run away from GIANT's patch baseline: joint, or read at a set µm/px (logged only then)."""
        return any(settings.get(key) is not None for key in ("inference", "patch_mpp"))

    def published_method(self, runs_per_item: int, settings: Mapping[str, SettingValue]) -> str | None:
        if runs_per_item != 1 or any(
            settings.get(key) not in (None, value) for key, value in BEFORE_THE_STUDY.items()
        ):
            return None
        if (settings.get("patch_count"), settings.get("patch_size")) == (30, 224):
            return "Patch (30 x 224, vote)"
        return None
