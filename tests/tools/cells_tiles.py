"""Slides the cells tests and benchmark draw: hematoxylin-coloured discs of known number and size on a
pink (eosin) background, written as real Aperio-style SVS files at a chosen µm/px.

Each disc's edge pixels get the fraction of the pixel it covers (4 x 4 samples per pixel), so its area
in µm² is π r² to within a fraction of a pixel, the truth the tool's measurement is held to."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tifffile
import yaml
from PIL import Image

from giant.tools.cells.settings import CellsSettings

ROOT = Path(__file__).resolve().parents[2]
PINK = np.array([232.0, 165.0, 205.0])  # eosin-stained stroma
NUCLEUS = np.array([85.0, 55.0, 145.0])  # hematoxylin
SAMPLES = 4


@dataclass(frozen=True)
class Tile:
    path: Path
    mpp: float
    count: int  # discs drawn
    mean_area_um2: float  # their mean true area


def settings(**changes: Any) -> CellsSettings:
    """conf/tools/cells.yaml's values, with `changes`."""
    values = yaml.safe_load((ROOT / "conf" / "tools" / "cells.yaml").read_text())
    return CellsSettings.model_validate(values | changes)


def draw_discs(size: int, centres: list[tuple[float, float]], radii: list[float], seed: int) -> np.ndarray:
    """An RGB image: the discs (centres and radii in pixels) over pink, with a little sensor noise."""
    rng = np.random.default_rng(seed)
    cover = np.zeros((size, size))
    for (cx, cy), r in zip(centres, radii, strict=True):
        x0, y0 = max(0, int(cx - r - 2)), max(0, int(cy - r - 2))
        x1, y1 = min(size, int(cx + r + 3)), min(size, int(cy + r + 3))
        sy, sx = np.mgrid[y0 * SAMPLES : y1 * SAMPLES, x0 * SAMPLES : x1 * SAMPLES]
        inside = ((sx + 0.5) / SAMPLES - cx) ** 2 + ((sy + 0.5) / SAMPLES - cy) ** 2 <= r * r
        part = inside.reshape(y1 - y0, SAMPLES, x1 - x0, SAMPLES).mean(axis=(1, 3))
        cover[y0:y1, x0:x1] = np.maximum(cover[y0:y1, x0:x1], part)
    rgb = PINK * (1 - cover[..., None]) + NUCLEUS * cover[..., None] + rng.normal(0, 3, (size, size, 3))
    return np.clip(rgb.round(), 0, 255).astype(np.uint8)


def nuclei_tile(
    path: Path, mpp: float, *, grid: int = 12, size_um: float = 512.0, seed: int = 0, pairs: bool = False
) -> Tile:
    """A slide of `grid` x `grid` separate discs of radius 3.5 to 5 µm (or, with `pairs`, touching
    pairs of discs, each counted) over `size_um` µm of pink; no discs when grid is 0."""
    rng = np.random.default_rng(seed)
    size = round(size_um / mpp)
    step = size / max(grid, 1)
    centres: list[tuple[float, float]] = []
    radii: list[float] = []
    for i in range(grid):
        for j in range(grid):
            cx = (i + 0.5) * step + rng.uniform(-1, 1) / mpp
            cy = (j + 0.5) * step + rng.uniform(-1, 1) / mpp
            r = rng.uniform(3.5, 5.0) / mpp
            if pairs:  # two discs overlapping a little, side by side: one piece the watershed must split
                centres += [(cx - 0.85 * r, cy), (cx + 0.85 * r, cy)]
                radii += [r, r]
            else:
                centres.append((cx, cy))
                radii.append(r)
    rgb = draw_discs(size, centres, radii, seed)
    write_svs(path, rgb, mpp)
    area = float(np.mean([math.pi * (r * mpp) ** 2 for r in radii])) if radii else 0.0
    return Tile(path, mpp, len(radii), area)


def write_svs(path: Path, rgb: np.ndarray, mpp: float, tile: int = 256) -> Path:
    """An Aperio-style SVS of `rgb` (level 0 and a downsample-4 level, JPEG q95) that OpenSlide reads
    with `mpp` µm per pixel."""
    height, width = rgb.shape[:2]
    header = f"Aperio Image Library v12.0.5 (giant test)\r\n{width}x{height} [0,0 {width}x{height}]"
    fields = f"AppMag = {round(10 / mpp)}|MPP = {mpp:.4f}"
    jpeg: dict[str, Any] = {"compression": "jpeg", "compressionargs": {"level": 95}}
    reduced = np.asarray(Image.fromarray(rgb).reduce(4))
    with tifffile.TiffWriter(path) as tif:
        tiled: dict[str, Any] = {"tile": (tile, tile), "photometric": "rgb", "metadata": None, **jpeg}
        tif.write(rgb, description=f"{header} ({tile}x{tile}) JPEG/RGB Q=95|{fields}", **tiled)
        thumb = np.asarray(Image.fromarray(reduced).reduce(2))
        tif.write(thumb, description=f"{header} -> {thumb.shape[1]}x{thumb.shape[0]}", metadata=None)
        tif.write(
            reduced, description=f"{header} -> {reduced.shape[1]}x{reduced.shape[0]} - |{fields}", **tiled
        )
    return path
