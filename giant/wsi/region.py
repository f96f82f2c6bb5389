"""Crop geometry shared by every reader: clamping, level choice and output size (paper_facts §2).

Pure functions of numbers, kept apart from file access so the rules the paper fixes can be tested
exhaustively without a slide.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image

from giant.core import Box

LEVEL_BIAS = 0.85  # OpenSlide's best-level rule scaled by 0.85: prefer finer levels (sharper crops)


@dataclass(frozen=True)
class RegionImage:
    """A rendered crop and where it came from: `read` is the clamped box the pixels show, which is
    what guides must label and what a trajectory must record."""

    image: Image.Image
    requested: Box
    read: Box
    level: int
    clamped: bool


def clamp_box(box: Box, width: int, height: int) -> Box:
    """Clamp each coordinate into the slide as the paper does (x then w, y then h, independently).

    The paper allows x = W0 (then a 1 px read past the edge); we stop at W0 - 1 so that the box read
    always lies inside the slide.
    """
    x = min(max(box.x, 0), width - 1)
    y = min(max(box.y, 0), height - 1)
    w = min(max(box.w, 1), width - x)
    h = min(max(box.h, 1), height - y)
    return Box(x=x, y=y, w=w, h=h)


def choose_level(downsamples: Sequence[float], w: int, h: int, size: int) -> int:
    """The coarsest level whose downsample is <= max(1, 0.85 * d), d = max(w, h) / size; one level
    finer while the region at that level would come out smaller than `size` (so we never upscale)."""
    long_side = max(w, h)
    limit = max(1.0, LEVEL_BIAS * long_side / size)
    level = max(i for i, ds in enumerate(downsamples) if ds <= limit or i == 0)
    while level > 0 and long_side / downsamples[level] < size:
        level -= 1
    return level


def output_size(w: int, h: int, size: int) -> tuple[int, int]:
    """Long side exactly `size`, aspect ratio kept; a region smaller than `size` keeps its own size."""
    long_side = max(w, h)
    if long_side <= size:
        return (w, h)
    return (max(1, round(w * size / long_side)), max(1, round(h * size / long_side)))
