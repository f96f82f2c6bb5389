"""The cells tool's settings (`tools.cells.*`, values in conf/tools/cells.yaml): types and checks only."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from giant.roles import Method, Operational


class CellsSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mpp: Method[float] = Field(
        gt=0, description="µm/px the region is read at for counting (the slide's level serving it)."
    )
    max_mpp: Method[float] = Field(
        gt=0, description="The coarsest µm/px nuclei can be counted at; a coarser read is refused."
    )
    max_side: Method[int] = Field(
        ge=64, le=8192, description="The most pixels on the long side of the region read for one call."
    )
    stains: Method[list[list[float]]] = Field(
        description="RGB optical densities of hematoxylin, eosin and a third stain (rows), for deconvolution."
    )
    tissue_od: Method[float] = Field(
        ge=0, description="Summed RGB optical density above which a pixel counts as tissue."
    )
    min_hematoxylin: Method[float] = Field(
        ge=0, description="The hematoxylin threshold's floor (optical density): fainter is never a nucleus."
    )
    min_area_um2: Method[float] = Field(gt=0, description="Smaller dark objects (µm²) are not counted.")
    smooth_um: Method[float] = Field(ge=0, description="Gaussian smoothing (µm) before the threshold.")
    overlay_side: Operational[int] = Field(
        ge=0, description="Long side (px) of the detections' overlay kept in the trajectory; 0: none."
    )

    @model_validator(mode="after")
    def _check(self) -> CellsSettings:
        if len(self.stains) != 3 or any(len(row) != 3 or not any(row) for row in self.stains):
            raise ValueError("stains must be three rows of three RGB optical densities (H, E, residual)")
        if self.mpp > self.max_mpp:
            raise ValueError(f"mpp={self.mpp} is coarser than max_mpp={self.max_mpp}: no call could run")
        return self
