"""Axis guides on the overview and every crop (paper_facts §3).

The model names its next crop in level-0 pixels; labelled guide lines let it read absolute positions
off the image instead of guessing scale. Labels use the box actually read (after clamping), so the
numbers the model sees always match the pixels it sees.
"""

from __future__ import annotations

from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont

from giant.core import Box

_LINE_RGBA = (0, 255, 0, 110)  # thin, semi-transparent green
_LABEL_BOX_RGBA = (0, 0, 0, 160)  # dark translucent box behind white text
_TEXT_RGBA = (255, 255, 255, 255)
_BORDER_RGB = (255, 0, 0)
_Font = ImageFont.FreeTypeFont | ImageFont.ImageFont


@dataclass(frozen=True)
class Guide:
    """One guide line: where it is in the image (pixels) and the level-0 coordinate it marks."""

    pixel: int
    label: int


def guide_lines(box: Box, image_size: tuple[int, int], n: int = 4) -> tuple[list[Guide], list[Guide]]:
    """Vertical (x) and horizontal (y) guides at 1/(n+1) .. n/(n+1) of the image.

    Labels are computed from the level-0 box, not from rounded pixel positions, so a 100000-wide box
    gives 20000/40000/60000/80000 at any image width.
    """
    if n < 1:
        raise ValueError(f"guide count n={n} must be at least 1")
    width, height = image_size
    xs = [Guide(round(i * width / (n + 1)), box.x + round(i * box.w / (n + 1))) for i in range(1, n + 1)]
    ys = [Guide(round(i * height / (n + 1)), box.y + round(i * box.h / (n + 1))) for i in range(1, n + 1)]
    return xs, ys


def font_size(image_size: tuple[int, int]) -> int:
    """About 2% of the short side, at least 8 px (readable by the model, small enough not to hide tissue)."""
    return max(8, round(0.02 * min(image_size)))


def draw_guides(image: Image.Image, box: Box, n: int = 4) -> Image.Image:
    """A copy of `image` (showing level-0 `box`) with labelled guides, a red border and the
    "(x0, y0)" corner label."""
    base = image.convert("RGB")
    width, height = base.size
    size = font_size(base.size)
    font = ImageFont.load_default(size=size)
    pad = max(1, size // 6)
    line = max(1, round(min(width, height) / 500))
    overlay = Image.new("RGBA", base.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    xs, ys = guide_lines(box, base.size, n)
    for g in xs:
        draw.line([(g.pixel, 0), (g.pixel, height - 1)], fill=_LINE_RGBA, width=line)
    for g in ys:
        draw.line([(0, g.pixel), (width - 1, g.pixel)], fill=_LINE_RGBA, width=line)
    for g in xs:
        _label(draw, (g.pixel + line + pad, pad + size + 3 * pad), str(g.label), font, pad)
    for g in ys:
        _label(draw, (line + 2 * pad, g.pixel + line + pad), str(g.label), font, pad)
    _label(draw, (line + 2 * pad, line + pad), f"({box.x}, {box.y})", font, pad)
    out = Image.alpha_composite(base.convert("RGBA"), overlay).convert("RGB")
    ImageDraw.Draw(out).rectangle([(0, 0), (width - 1, height - 1)], outline=_BORDER_RGB, width=line)
    return out


def _label(
    draw: ImageDraw.ImageDraw,
    at: tuple[int, int],
    text: str,
    font: ImageFont.FreeTypeFont | ImageFont.ImageFont,
    pad: int,
) -> None:
    left, top, right, bottom = draw.textbbox(at, text, font=font)
    draw.rectangle([(left - pad, top - pad), (right + pad, bottom + pad)], fill=_LABEL_BOX_RGBA)
    draw.text(at, text, font=font, fill=_TEXT_RGBA)
