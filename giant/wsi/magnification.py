"""Magnification as microns per pixel: the one rule for the µm/px of an image shown to the model,
and the usual objective name beside it.

An objective name alone misleads (a scanner's "5x" that was 2.5x), so every image records its µm/px
(giant.record.trajectory.Region.mpp) and pages print the objective only as a rough equivalent:
40x ~ 0.25, 20x ~ 0.5, 10x ~ 1.0, 5x ~ 2.0 µm/px (objective ~ 10 / mpp). The slide's level-0 µm/px
is OpenSlide's `openslide.mpp-x`, which its DICOM driver fills from the pixel spacing; a slide that
says neither gives None ("unknown"), never a guess.
"""

from __future__ import annotations

import math

from giant.core import Box

OBJECTIVE_MICRONS = 10.0  # objective x µm/px: 40x x 0.25 = 20x x 0.5 = 10


def shown_mpp(slide_mpp: float | None, read: Box, width: int, height: int) -> float | None:
    """µm/px of an image of `width` x `height` pixels showing the level-0 box `read` (its long side's
    level-0 microns over its pixels); None when the slide's µm/px is unknown."""
    side = max(width, height)
    if slide_mpp is None or side <= 0:
        return None
    return slide_mpp * max(read.w, read.h) / side


def objective(mpp: float) -> str:
    """The usual objective name of a µm/px: 0.25 -> "~40x", 2.0 -> "~5x", 4.0 -> "~2.5x"."""
    power = OBJECTIVE_MICRONS / mpp
    return f"~{power:.0f}x" if power >= 10 else f"~{power:.2g}x"


def mpp_text(mpp: float | None) -> str:
    """ "0.50 µm/px (~20x)", or "unknown" for an image of a slide without µm/px."""
    return "unknown" if mpp is None else f"{mpp:.2f} µm/px ({objective(mpp)})"


def standard_mpp(mpp: float) -> float:
    """The µm/px of the nearest usual objective (40x, 20x, 10x, 5x, 2.5x, ...: a factor 2 apart)."""
    return OBJECTIVE_MICRONS / 40 * 2.0 ** round(math.log2(mpp * 40 / OBJECTIVE_MICRONS))


def objective_band(mpp: float) -> str:
    """The nearest usual objective with its µm/px, "~20x (0.50 µm/px)": summary.json counts images by it."""
    band = standard_mpp(mpp)
    return f"{objective(band)} ({band:.2f} µm/px)"
