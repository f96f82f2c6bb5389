"""How answers become the reported metric: the settings scoring, summarize and a re-score take whole.

They are top-level run keys in conf/config.yaml (`tie_rule=...` on the command line); `RunOptions`
extends this model, and `RunOptions.scoring` hands the scoring part on as one value, so a new scoring
setting reaches every scorer without another argument threaded through.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from giant.roles import Scoring


class NavigationSettings(BaseModel):
    """How navigation and evidence are measured (giant.record.navigation; docs/navigation.md): a
    measurement, so never part of a job's hash, and a re-score may change it."""

    model_config = ConfigDict(extra="forbid")

    coverage_mpp: float = Field(
        gt=0, description="Tissue coverage counts crops shown at or finer than this µm/px."
    )
    hit_mpp: float = Field(gt=0, description="A crop can be a hit only at or finer than this µm/px.")
    hit_overlap: float = Field(
        gt=0, le=1, description="A crop is on target when at least this share of its area is a target class."
    )


class ScoringSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    bootstrap_replicates: Scoring[int] = Field(
        ge=10, description="Bootstrap replicates over items for mean +- std and the 95% interval."
    )
    tie_rule: Scoring[Literal["lowest_run_index"]] = Field(
        description="Majority vote over runs: a tie goes to the label of the lowest run index."
    )
    panda_null_as_zero: Scoring[bool] = Field(
        description='A PANDA answer of "isup_grade": null (benign) scores as grade 0.'
    )
    navigation: Scoring[NavigationSettings] = Field(
        description="Where the model looked: coverage and hit thresholds (docs/navigation.md)."
    )
