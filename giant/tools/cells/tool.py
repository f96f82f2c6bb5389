"""The cells tool: nuclei counted and measured in microns on a region the model names, no weights.

A call names a level-0 box (as a crop does); the box is read from the slide at the level serving the
settings' µm/px (`tools.cells.mpp`, at most `max_side` pixels on its long side), the nuclei are found
by colour deconvolution, a threshold and a watershed (giant.tools.cells.nuclei), and the model is told
numbers a pathologist would measure: the count, the density per mm² of tissue, the mean and spread of
nuclear area in µm², a shape irregularity and the tissue fraction. A read coarser than `max_mpp` is
refused with one line (nuclei are then a few pixels wide), as is a slide that records no µm/px. The
detections' outlines over the region are kept beside the trajectory for its page.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any, ClassVar, Literal, Self

import cv2
import numpy as np
from PIL import Image
from pydantic import Field

from giant.actions import ActionModel
from giant.core import Box
from giant.registry import register
from giant.tools.base import REGION_HINTS, Seen, Tool, ToolContext, ToolRecord, UnusableCall
from giant.tools.cells.nuclei import Nuclei, Thresholds, detect, outlines
from giant.tools.cells.settings import CellsSettings
from giant.wsi.encode import encode_jpeg
from giant.wsi.region import clamp_box

METHOD = "colour deconvolution, threshold and watershed (no weights)"
OUTLINE_RGB = (0, 255, 0)


class CellsAction(ActionModel):
    """Count and measure the nuclei in a level-0 box."""

    type: Literal["cells"] = "cells"
    x: int = Field(ge=0)
    y: int = Field(ge=0)
    width: int = Field(gt=0)
    height: int = Field(gt=0)


class CellsRecord(ToolRecord):
    """One cells call: the region measured, how, and the numbers the model was told."""

    region: Box  # level-0 box read (clamped to the slide)
    level: int  # the slide level read
    mpp: float  # µm/px of the pixels measured
    width: int  # pixels measured
    height: int
    count: int
    density_per_mm2: float  # nuclei per mm² of tissue
    mean_area_um2: float
    sd_area_um2: float
    irregularity: float  # 1 - mean solidity (0: every outline convex)
    tissue_fraction: float
    threshold: float  # the hematoxylin optical density nuclei exceeded
    overlay: str | None = None  # the outlines over the region, a JPEG beside the trajectory
    seconds: float = 0.0


def cells_prompt(settings: CellsSettings) -> str:
    """The system prompt's paragraph on the cells tool, appended when it is enabled."""
    widest = settings.max_side * settings.max_mpp / 1000
    return (
        "You can also measure cells: the cells action takes a region (x, y, width, height in level-0 "
        "pixels, like a crop) and counts its nuclei on the slide's own pixels at about "
        f"{settings.mpp:g} µm/px. It returns the number of nuclei, their density per mm² of tissue, the "
        "mean and standard deviation of nuclear area in µm², a shape irregularity (0 when every "
        "nucleus is convex, larger as outlines get ragged) and the fraction of the region that is "
        f"tissue. Regions wider than about {widest:.1f} mm are refused (too coarse to see nuclei). The "
        "detection is classical (a stain threshold, not a trained segmenter). A cells call uses one step."
    )


def cells_result(record: CellsRecord) -> str:
    """The reply to a cells call: the region, the resolution, then each number."""
    return (
        f"cells measured the region {record.region} at {record.mpp:.2f} µm/px "
        f"({record.width}×{record.height} px): {record.count} nuclei; "
        f"density {record.density_per_mm2:.0f} per mm² of tissue; nuclear area mean "
        f"{record.mean_area_um2:.1f} µm², sd {record.sd_area_um2:.1f} µm²; irregularity "
        f"{record.irregularity:.3f}; tissue fraction {record.tissue_fraction:.2f}."
    )


def read_side(box: Box, slide_mpp: float, settings: CellsSettings) -> tuple[int, float]:
    """The long side (pixels) the box is read at, and the µm/px that gives: the settings' µm/px when
    `max_side` allows, never finer than the slide's level 0 (no upscaling)."""
    long_side = max(box.w, box.h)
    side = min(long_side, settings.max_side, max(1, math.ceil(long_side * slide_mpp / settings.mpp)))
    return side, slide_mpp * long_side / side


def too_coarse(box: Box, slide_mpp: float, mpp: float, settings: CellsSettings) -> str:
    """Why a read at `mpp` is refused, and what the model can do instead."""
    if slide_mpp > settings.max_mpp:
        return (
            f"Not executed: this slide's finest level is {slide_mpp:.2f} µm/px, coarser than the "
            f"{settings.max_mpp:g} µm/px nuclei need; cells cannot count here. Crop or answer instead."
        )
    widest = math.floor(settings.max_side * settings.max_mpp / slide_mpp)
    return (
        f"Not executed: the region {box} would be read at {mpp:.2f} µm/px, coarser than the "
        f"{settings.max_mpp:g} µm/px nuclei need; ask cells for a region at most {widest} level-0 px "
        "on its longer side."
    )


def draw_overlay(rgb: np.ndarray, nuclei: Nuclei, side: int) -> Image.Image:
    """The region with each nucleus ringed just outside its edge (the nucleus itself left visible), at
    most `side` pixels long; the rings are as wide as the downscale, so they survive it."""
    scale = max(rgb.shape[:2]) / side if side else 1.0
    found = nuclei.labels > 0
    width = 2 * max(1, math.ceil(scale)) + 1
    ring = cv2.dilate(found.astype(np.uint8), np.ones((width, width), np.uint8)).astype(bool) & ~found
    shown = rgb.copy()
    shown[ring | outlines(nuclei.labels)] = OUTLINE_RGB
    image = Image.fromarray(shown)
    if scale > 1:
        image.thumbnail((side, side), Image.Resampling.BILINEAR)
    return image


@register("tool")
class CellsTool(Tool[CellsSettings, CellsAction, CellsRecord]):
    """Counts and measures nuclei; its settings are its whole state (no model is loaded)."""

    name = "cells"
    settings = CellsSettings
    action = CellsAction
    record = CellsRecord
    description = (
        "Count and measure the nuclei in a level-0 region: count, density per mm², nuclear area in µm², "
        "shape irregularity and tissue fraction."
    )
    hints: ClassVar[dict[str, str]] = REGION_HINTS
    report_title = "Cell measurements"
    report_note = (
        "nuclei found by colour deconvolution, threshold and watershed on the region read from the slide "
        "at the settings' µm/px; areas in µm², density per mm² of tissue."
    )

    def __init__(self, settings: CellsSettings) -> None:
        self.cfg = settings
        self.thresholds = Thresholds(
            stains=settings.stains,
            tissue_od=settings.tissue_od,
            min_hematoxylin=settings.min_hematoxylin,
            min_area_um2=settings.min_area_um2,
            smooth_um=settings.smooth_um,
        )

    @classmethod
    def load(cls, settings: CellsSettings) -> Self:
        return cls(settings)

    def prompt(self) -> str:
        return cells_prompt(self.cfg)

    async def run(self, ctx: ToolContext, seen: Seen, action: CellsAction) -> CellsRecord:
        """Measure the nuclei of the action's box. Raises UnusableCall (no µm/px, too coarse, a
        detection failure) with the feedback for the model."""
        slide = ctx.slide
        if slide.mpp_x is None:
            raise UnusableCall(
                "Not executed: this slide does not record its µm per pixel, so cells cannot measure in "
                "microns. Crop or answer instead."
            )
        box = clamp_box(
            Box(x=action.x, y=action.y, w=action.width, h=action.height), slide.width, slide.height
        )
        side, mpp = read_side(box, slide.mpp_x, self.cfg)
        if mpp > self.cfg.max_mpp * (1 + 1e-9):
            raise UnusableCall(too_coarse(box, slide.mpp_x, mpp, self.cfg))
        started = time.monotonic()
        region = await slide.aread_region(box, side, fill=ctx.fill)
        rgb = np.asarray(region.image.convert("RGB"))
        mpp = slide.mpp_x * max(region.read.w, region.read.h) / max(rgb.shape[:2])
        try:
            nuclei = await asyncio.to_thread(detect, rgb, mpp, self.thresholds)
        except Exception as exc:  # a detection failure ends this call, never the episode
            first = (str(exc).splitlines() or [""])[0][:200]
            raise UnusableCall(
                f"cells could not measure the region ({type(exc).__name__}: {first}). Crop or answer instead."
            ) from exc
        overlay = None
        if ctx.keep is not None and self.cfg.overlay_side:
            drawn = await asyncio.to_thread(draw_overlay, rgb, nuclei, self.cfg.overlay_side)
            overlay = ctx.keep(encode_jpeg(drawn))
        return CellsRecord(
            call_index=seen.call_index,
            tool=self.name,
            region=region.read,
            level=region.level,
            mpp=round(mpp, 4),
            width=rgb.shape[1],
            height=rgb.shape[0],
            count=nuclei.count,
            density_per_mm2=round(nuclei.density_per_mm2, 1),
            mean_area_um2=round(nuclei.mean_area_um2, 2),
            sd_area_um2=round(nuclei.sd_area_um2, 2),
            irregularity=round(nuclei.irregularity, 4),
            tissue_fraction=round(nuclei.tissue_fraction, 4),
            threshold=round(nuclei.threshold, 4),
            overlay=overlay,
            seconds=round(time.monotonic() - started, 4),
        )

    def reply(self, record: CellsRecord) -> str:
        return cells_result(record)

    @classmethod
    def show(cls, action: CellsAction) -> list[str]:
        return [str(Box(x=action.x, y=action.y, w=action.width, h=action.height))]

    @classmethod
    def describe(cls, record: CellsRecord) -> dict[str, Any]:
        return {
            "summary": (
                f"cells measured {record.region} at {record.mpp:.2f} µm/px (level {record.level}, "
                f"{record.width}×{record.height} px) in {record.seconds:.2f} s"
            ),
            "model": METHOD,
            "image": f"the region {record.region}",
            "target": str(record.region),
            "rows": [
                ("nuclei", str(record.count)),
                ("density", f"{record.density_per_mm2:.0f} per mm² of tissue"),
                ("nuclear area", f"mean {record.mean_area_um2:.1f} µm², sd {record.sd_area_um2:.1f} µm²"),
                ("irregularity", f"{record.irregularity:.3f}"),
                ("tissue fraction", f"{record.tissue_fraction:.2f}"),
                ("hematoxylin threshold", f"{record.threshold:.3f} OD"),
            ],
            "overlay": record.overlay,
        }
