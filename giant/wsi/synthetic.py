"""Synthetic Aperio-style slides: real pyramidal SVS files for tests, benchmarks and the demo set.

Real slides are hundreds of megabytes and cannot ship with the project, yet every layer above must be
exercised on real files read by real OpenSlide. These slides look H&E-like (pink stroma, purple
nuclei, tissue blobs on white), are deterministic for a seed, and can carry "findings": small shapes
painted at known level-0 boxes, so the demo set can ask questions whose answer needs zooming in.

The image is rendered in horizontal strips one tile high, so memory stays bounded for any slide size:
level 0 streams to the file tile by tile, and only the downsample-4 level is kept in memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import tifffile
from PIL import Image, ImageChops, ImageDraw
from pydantic import BaseModel, ConfigDict

from giant.core import Box

Shape = Literal["circle", "square", "triangle", "cross", "diamond", "ring"]
SHAPES: tuple[Shape, ...] = ("circle", "square", "triangle", "cross", "diamond", "ring")

_FIELD_SCALE = 32  # level-0 pixels per cell of the low-resolution tissue and texture fields
_BACKGROUND = np.array([243.0, 242.0, 240.0], dtype=np.float32)
_STROMA_LIGHT = np.array([238.0, 190.0, 212.0], dtype=np.float32)
_STROMA_DARK = np.array([200.0, 110.0, 160.0], dtype=np.float32)
_FINDING_RGB = (20, 70, 40)  # dark green: no stain produces it, so it is unmistakable once seen
_NUCLEUS_SPACING_UM = 10.0  # mean distance between nuclei in tissue
_NUCLEUS_RADIUS_UM = (2.0, 3.5)


class Finding(BaseModel):
    """A shape painted into a level-0 box; small boxes make it visible only at high magnification."""

    model_config = ConfigDict(frozen=True)

    box: Box
    shape: Shape


@dataclass(frozen=True)
class _Nuclei:
    """Ellipse centres, radii and colours in level-0 pixels, sorted by top edge for strip lookup."""

    x: np.ndarray
    y: np.ndarray
    rx: np.ndarray
    ry: np.ndarray
    shade: np.ndarray
    top: np.ndarray


def write_synthetic_slide(  # noqa: PLR0913  keyword-only options of a synthetic slide, each with a default
    path: str | Path,
    width: int,
    height: int,
    *,
    seed: int,
    findings: Sequence[Finding] = (),
    tile: int = 256,
    quality: int = 85,
    mpp: float = 0.25,
    label: bool = False,
) -> Path:
    """Write an Aperio-style SVS (tiled JPEG level 0, downsample-4 pyramid) and return its path.

    OpenSlide reports it as vendor "aperio" with the given microns per pixel. `label=True` adds label
    and macro associated images, as scanners do. The same arguments always give the same pixels.
    """
    path = Path(path)
    _check_arguments(width, height, tile, quality, mpp, findings)
    rng = np.random.default_rng(seed)
    tissue = _smooth_field(width, height, rng, cells=12)
    weight, fibre = _as_levels(_tissue_weight(tissue)), _as_levels(_smooth_field(width, height, rng, cells=3))
    nuclei = _place_nuclei(width, height, tissue, rng, mpp)
    grain = rng.integers(0, 2 * _NOISE_AMPLITUDE + 1, size=(tile, width, 3), dtype=np.uint8)

    path.parent.mkdir(parents=True, exist_ok=True)
    level1 = np.empty((-(-height // 4), -(-width // 4), 3), dtype=np.uint8)
    strips = (
        _render_strip(
            y0, min(tile, height - y0), width, weight, fibre, nuclei, Image.fromarray(grain), findings
        )
        for y0 in range(0, height, tile)
    )
    magnification = round(10.0 / mpp)
    header = f"Aperio Image Library v12.0.5 (giant synthetic)\r\n{width}x{height} [0,0 {width}x{height}]"
    fields = f"AppMag = {magnification}|MPP = {mpp:.4f}|ScanScope ID = GIANT|Seed = {seed}"
    jpeg: dict[str, Any] = {"compression": "jpeg", "compressionargs": {"level": quality}}
    big = width * height * 3 > 2**31
    with tifffile.TiffWriter(path, bigtiff=big) as tif:
        tif.write(
            _tiles(strips, width, tile, level1),
            shape=(height, width, 3),
            dtype=np.uint8,
            tile=(tile, tile),
            description=f"{header} ({tile}x{tile}) JPEG/RGB Q={quality}|{fields}",
            metadata=None,
            photometric="rgb",
            **jpeg,
        )
        thumb = Image.fromarray(level1)
        thumb.thumbnail((1024, 768), Image.Resampling.LANCZOS)
        tif.write(np.asarray(thumb), description=f"{header} -> {thumb.width}x{thumb.height}", metadata=None)
        level = level1
        while True:
            tif.write(
                level,
                tile=(tile, tile),
                description=f"{header} -> {level.shape[1]}x{level.shape[0]} - |{fields}",
                metadata=None,
                photometric="rgb",
                **jpeg,
            )
            if max(level.shape[:2]) <= 2 * tile:
                break
            level = np.asarray(Image.fromarray(level).reduce(4))
        if label:
            _write_associated(tif, np.asarray(thumb), seed)
    return path


def _check_arguments(
    width: int, height: int, tile: int, quality: int, mpp: float, findings: Sequence[Finding]
) -> None:
    if width < 16 or height < 16:
        raise ValueError(f"synthetic slide size {width}x{height} is too small: use at least 16x16")
    if tile % 16 or tile < 16:
        raise ValueError(f"tile={tile} is not a multiple of 16 (TIFF and JPEG need it): use e.g. 256")
    if not 1 <= quality <= 100:
        raise ValueError(f"quality={quality} is outside 1..100")
    if mpp <= 0:
        raise ValueError(f"mpp={mpp} must be positive")
    for f in findings:
        b = f.box
        if b.w < 3 or b.h < 3 or b.x < 0 or b.y < 0 or b.right > width or b.bottom > height:
            raise ValueError(f"finding box {b} must be at least 3x3 and inside the {width}x{height} slide")


def _smooth_field(width: int, height: int, rng: np.random.Generator, cells: int) -> np.ndarray:
    """Random values on a coarse grid, interpolated to one value per _FIELD_SCALE block, in [0, 1].

    `cells` is the number of grid cells along the long side: fewer cells give larger blobs.
    """
    fw, fh = -(-width // _FIELD_SCALE), -(-height // _FIELD_SCALE)
    step = max(fw, fh) / cells
    gw, gh = int(fw / step) + 2, int(fh / step) + 2
    grid = Image.fromarray(rng.random((gh, gw), dtype=np.float32), mode="F")
    field = np.asarray(grid.resize((fw, fh), Image.Resampling.BICUBIC, box=(0, 0, fw / step, fh / step)))
    lo, hi = float(field.min()), float(field.max())
    return ((field - lo) / max(hi - lo, 1e-6)).astype(np.float32)


def _tissue_weight(density: np.ndarray) -> np.ndarray:
    """Blob mask: about 40-50% of the slide is tissue; edges soften over one field cell."""
    return np.clip((density - 0.45) * 40.0, 0.0, 1.0)


def _as_levels(field: np.ndarray) -> Image.Image:
    """A [0, 1] field as an 8-bit image: Pillow upsamples 8-bit images much faster than floats."""
    return Image.fromarray((field * 255 + 0.5).astype(np.uint8), mode="L")


_LEVELS = 16  # quantisation steps of tissue weight and fibre density (one byte holds both)
_NOISE_AMPLITUDE = 7  # +- grey levels of per-pixel grain
_NUCLEUS_SHADES = 8
_NUCLEUS_DARK = np.array([70.0, 40.0, 120.0], dtype=np.float32)
_NUCLEUS_LIGHT = np.array([140.0, 90.0, 170.0], dtype=np.float32)


def _channel_tables() -> list[list[int]]:
    """Per-channel lookup tables from (weight * _LEVELS + fibre) to a colour: Pillow's point() maps
    a byte image through them far faster than any per-pixel numpy arithmetic."""
    q = np.arange(_LEVELS, dtype=np.float32) / (_LEVELS - 1)
    weight, fibre = np.meshgrid(q, q, indexing="ij")
    stroma = _STROMA_LIGHT + (_STROMA_DARK - _STROMA_LIGHT) * fibre[..., None]
    rgb = (_BACKGROUND + (stroma - _BACKGROUND) * weight[..., None]).reshape(-1, 3)
    rgb = np.clip(rgb + _NOISE_AMPLITUDE, 0, 255)  # the grain is added later with offset -amplitude
    return [rgb[:, c].round().astype(int).tolist() for c in range(3)]


def _nucleus_colours() -> list[tuple[int, int, int]]:
    shade = np.linspace(0.0, 1.0, _NUCLEUS_SHADES)[:, None]
    rgb = _NUCLEUS_DARK + (_NUCLEUS_LIGHT - _NUCLEUS_DARK) * shade + _NOISE_AMPLITUDE
    return [(int(r), int(g), int(b)) for r, g, b in rgb.round()]


_TABLES = _channel_tables()
_NUCLEUS_RGB = _nucleus_colours()


def _place_nuclei(
    width: int, height: int, tissue: np.ndarray, rng: np.random.Generator, mpp: float
) -> _Nuclei:
    spacing = _NUCLEUS_SPACING_UM / mpp
    n = int(width * height / spacing**2)
    x = rng.uniform(0, width, n)
    y = rng.uniform(0, height, n)
    weight = _tissue_weight(tissue[(y // _FIELD_SCALE).astype(int), (x // _FIELD_SCALE).astype(int)])
    keep = rng.random(n) < weight * 0.9
    x, y = x[keep], y[keep]
    m = len(x)
    lo, hi = (r / mpp for r in _NUCLEUS_RADIUS_UM)
    rx = rng.uniform(lo, hi, m)
    ry = rx * rng.uniform(0.6, 1.0, m)
    shade = rng.integers(0, _NUCLEUS_SHADES, m)
    order = np.argsort(y - ry)
    return _Nuclei(x[order], y[order], rx[order], ry[order], shade[order], (y - ry)[order])


def _render_strip(
    y0: int,
    rows: int,
    width: int,
    weight: Image.Image,
    fibre: Image.Image,
    nuclei: _Nuclei,
    grain: Image.Image,
    findings: Sequence[Finding],
) -> Image.Image:
    """RGB pixels for level-0 rows [y0, y0 + rows): the same arguments always give the same pixels."""
    box = (0.0, y0 / _FIELD_SCALE, width / _FIELD_SCALE, (y0 + rows) / _FIELD_SCALE)
    shift = 9 - _LEVELS.bit_length()
    w = np.asarray(weight.resize((width, rows), Image.Resampling.BILINEAR, box=box)) >> shift
    f = np.asarray(fibre.resize((width, rows), Image.Resampling.BILINEAR, box=box)) >> shift
    index = Image.fromarray(w * np.uint8(_LEVELS) + f, mode="L")
    strip = Image.merge("RGB", [index.point(table) for table in _TABLES])

    draw = ImageDraw.Draw(strip)
    lo = int(np.searchsorted(nuclei.top, y0 - 2 * float(nuclei.ry.max(initial=0.0))))
    hi = int(np.searchsorted(nuclei.top, y0 + rows))
    for cx, cy, rx, ry, shade in zip(
        nuclei.x[lo:hi].tolist(),
        (nuclei.y[lo:hi] - y0).tolist(),
        nuclei.rx[lo:hi].tolist(),
        nuclei.ry[lo:hi].tolist(),
        nuclei.shade[lo:hi].tolist(),
        strict=True,
    ):
        draw.ellipse((cx - rx, cy - ry, cx + rx, cy + ry), fill=_NUCLEUS_RGB[shade])
    for finding in findings:
        if finding.box.bottom > y0 and finding.box.y < y0 + rows:
            _draw_finding(draw, finding, y0)
    return ImageChops.add(strip, grain.crop((0, 0, width, rows)), scale=1.0, offset=-_NOISE_AMPLITUDE)


def _draw_finding(draw: ImageDraw.ImageDraw, finding: Finding, y0: int) -> None:
    b = finding.box
    x0, y1, x1, y2 = b.x, b.y - y0, b.right - 1, b.bottom - 1 - y0
    cx, cy = (x0 + x1) / 2, (y1 + y2) / 2
    bar = max(1, min(b.w, b.h) // 4)
    fill = _FINDING_RGB
    match finding.shape:
        case "circle":
            draw.ellipse((x0, y1, x1, y2), fill=fill)
        case "ring":
            draw.ellipse((x0, y1, x1, y2), outline=fill, width=bar)
        case "square":
            draw.rectangle((x0, y1, x1, y2), fill=fill)
        case "triangle":
            draw.polygon([(cx, y1), (x1, y2), (x0, y2)], fill=fill)
        case "diamond":
            draw.polygon([(cx, y1), (x1, cy), (cx, y2), (x0, cy)], fill=fill)
        case "cross":
            draw.rectangle((cx - bar / 2, y1, cx + bar / 2, y2), fill=fill)
            draw.rectangle((x0, cy - bar / 2, x1, cy + bar / 2), fill=fill)


def _tiles(strips: Iterator[Image.Image], width: int, tile: int, level1: np.ndarray) -> Iterator[np.ndarray]:
    """Cut each strip into full tiles (edges padded white) and fill the downsample-4 level on the way.

    Tiles are made contiguous here: tifffile's JPEG encoder is about three times slower on views.
    """
    row = 0
    for image in strips:
        reduced = np.asarray(image.reduce(4))
        level1[row : row + reduced.shape[0]] = reduced
        row += reduced.shape[0]
        strip = np.asarray(image)
        for x0 in range(0, width, tile):
            piece = strip[:, x0 : x0 + tile]
            padded = np.full((tile, tile, 3), 255, dtype=np.uint8)
            padded[: piece.shape[0], : piece.shape[1]] = piece
            yield padded


def _write_associated(tif: tifffile.TiffWriter, thumb: np.ndarray, seed: int) -> None:
    """Label and macro images: OpenSlide's Aperio driver needs both the description and the
    NewSubfileType (1 = reduced image, 9 = reduced image + macro) to name them."""
    label = Image.new("RGB", (400, 400), (255, 255, 255))
    ImageDraw.Draw(label).text((20, 180), f"GIANT synthetic {seed}", fill=(0, 0, 0))
    tif.write(
        np.asarray(label),
        description="Aperio Image Library v12.0.5\nlabel 400x400",
        subfiletype=1,
        metadata=None,
    )
    macro = Image.new("RGB", (1200, 400), (250, 250, 250))
    macro.paste(Image.fromarray(thumb).resize((800, 400)), (400, 0))
    tif.write(
        np.asarray(macro),
        description="Aperio Image Library v12.0.5\nmacro 1200x400",
        subfiletype=9,
        metadata=None,
    )
