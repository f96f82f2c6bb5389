"""`dataset.annotations` as validated once (the values live in conf/dataset_common.yaml and the
dataset files; giant.eval.annotations finds and reads the files)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator


class AnnotationSettings(BaseModel):
    """conf/dataset_common.yaml `annotations` (the values are there; docs/navigation.md explains them)."""

    model_config = ConfigDict(extra="forbid")

    path: Path | None = Field(description="Folder of per-slide annotations; null: no evidence metrics.")
    targets: list[str] = Field(
        description="Class names that count as evidence (GeoJSON names, mask classes)."
    )
    class_map: str = Field(
        min_length=1, description="The class_maps entry a label mask's values are read with."
    )
    class_maps: dict[str, dict[str, str]] = Field(
        description="Mask pixel value (as text) -> class name, by map name."
    )
    slide_providers: Path | None = Field(
        description="A CSV (image_id, data_provider; PANDA's train.csv): each slide's map is its provider's."
    )
    mask_downsample: float | None = Field(
        gt=0, description="Slide level-0 pixels per label-mask pixel; null: the mask is fitted to the slide."
    )

    @model_validator(mode="after")
    def _known_map(self) -> AnnotationSettings:
        if self.class_map not in self.class_maps:
            raise ValueError(
                f"annotations.class_map={self.class_map} is not one of {sorted(self.class_maps)}"
            )
        return self
