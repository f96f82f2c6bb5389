"""Whole-slide access: open a slide, read crops the way the paper does (paper_facts §2), fast.

OpenSlide reads every vendor format; all its failures (and the direct tile decoder's) become one
of the slide errors (giant.wsi.errors): `SlideMissing` when there is no file, `SlideUnreadable`
when there is one that cannot be read. The message names the file and the cause, so the agent can
record an item-level failure instead of crashing a run.
Aperio and generic tiled-TIFF levels with JPEG tiles are decoded directly (giant/wsi/tiles.py),
several times faster than OpenSlide for large crops; both paths share the geometry in region.py.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal

import openslide
from PIL import Image

from giant.core import Box
from giant.wsi.errors import SlideError, SlideMissing, SlideUnreadable
from giant.wsi.region import RegionImage, choose_level, clamp_box, output_size
from giant.wsi.tiles import TileReader, resize

__all__ = ["Fill", "RegionImage", "Slide", "shared_slide"]

Fill = Literal["white", "black"]
_FILL_RGB: dict[str, tuple[int, int, int]] = {"white": (255, 255, 255), "black": (0, 0, 0)}
THUMBNAIL_RANGE = (250, 4000)
# The last, non-integer step of the downscale (after DCT scaling and integer box reduction, so
# under 2x on the direct-tile path: plain bilinear through OpenCV when installed, see tiles.resize;
# Pillow's antialiased bilinear otherwise). Crops stay 30-45 dB PSNR from the paper's pure Lanczos
# (JPEG q75 itself is ~35 dB) at a fraction of Lanczos's cost, which would otherwise exceed the
# tile decoding for crops just above a level's resolution.
FINAL_RESAMPLE = Image.Resampling.BILINEAR


class Slide:
    """An open whole-slide image. Safe to read from several threads at once (OpenSlide is)."""

    def __init__(self, path: Path, handle: openslide.OpenSlide, *, direct_tiles: bool = True) -> None:
        self.path = path
        self._osr = handle
        self.level_dimensions: tuple[tuple[int, int], ...] = tuple(handle.level_dimensions)
        self.level_downsamples: tuple[float, ...] = tuple(float(d) for d in handle.level_downsamples)
        self.level_count = len(self.level_dimensions)
        self.width, self.height = self.level_dimensions[0]
        props = handle.properties
        self.mpp_x = _float_or_none(props.get(openslide.PROPERTY_NAME_MPP_X))
        self.mpp_y = _float_or_none(props.get(openslide.PROPERTY_NAME_MPP_Y))
        self.vendor: str | None = props.get(openslide.PROPERTY_NAME_VENDOR)
        self._tiles = TileReader.for_slide(path, self.vendor, self.level_dimensions) if direct_tiles else None
        # OpenSlide aborts the whole process when a handle is closed while another thread reads from
        # it (a timed-out or cancelled episode leaves its read running), so close() waits for reads.
        self._reads = 0
        self._closed = False
        self._idle = threading.Condition()

    @classmethod
    def open(cls, path: str | Path, *, direct_tiles: bool = True) -> Slide:
        """Open and probe the slide: a file that opens but cannot be decoded fails here, not mid-run.

        `direct_tiles=False` reads every level through OpenSlide (the general, slower path) instead
        of decoding JPEG tiles of Aperio and generic TIFF slides directly.
        """
        path = Path(path)
        if not path.is_file():
            raise SlideMissing(
                f"{path}: no such slide file (check the WSI root and the file name)", slide=path, tried=[path]
            )
        try:
            vendor = openslide.OpenSlide.detect_format(str(path))
        except openslide.OpenSlideError as exc:
            raise SlideUnreadable(f"{path}: cannot open slide: {exc}", slide=path) from exc
        if vendor is None:
            raise SlideUnreadable(
                f"{path}: not a whole-slide format OpenSlide can read (e.g. .svs, .tiff, .ndpi)", slide=path
            )
        try:
            handle = openslide.OpenSlide(str(path))
        except (openslide.OpenSlideError, openslide.OpenSlideUnsupportedFormatError) as exc:
            raise SlideUnreadable(f"{path}: cannot open {vendor} slide: {exc}", slide=path) from exc
        slide = cls(path, handle, direct_tiles=direct_tiles)
        try:
            slide._probe()
        except SlideError:  # close the handle, whatever the probe found
            slide.close()
            raise
        return slide

    def close(self) -> None:
        """Close once every read in flight (possibly in a worker thread) has finished."""
        with self._idle:
            if self._closed:
                return
            self._closed = True
            self._idle.wait_for(lambda: self._reads == 0)
        self._osr.close()
        if self._tiles is not None:
            self._tiles.close()

    def __enter__(self) -> Slide:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Slide({str(self.path)!r}, {self.width}x{self.height}, levels={self.level_count})"

    def read_region(self, box: Box, size: int, fill: Fill = "white") -> RegionImage:
        """The crop for a level-0 box with long side exactly `size` (smaller boxes keep their size).

        The box is clamped to the slide; `RegionImage.read` is the box the pixels show.
        """
        if size < 1:
            raise ValueError(f"crop size {size} must be a positive number of pixels")
        if fill not in _FILL_RGB:
            raise ValueError(f"fill={fill!r} is not one of {sorted(_FILL_RGB)}")
        read = clamp_box(box, self.width, self.height)
        level = choose_level(self.level_downsamples, read.w, read.h, size)
        with self._idle:
            if self._closed:
                raise SlideUnreadable(
                    f"{self.path}: slide is closed (open it again to read)", slide=self.path
                )
            self._reads += 1
        try:
            image = self._render(read, level, output_size(read.w, read.h, size), _FILL_RGB[fill])
        finally:
            with self._idle:
                self._reads -= 1
                self._idle.notify_all()
        return RegionImage(image=image, requested=box, read=read, level=level, clamped=read != box)

    async def aread_region(self, box: Box, size: int, fill: Fill = "white") -> RegionImage:
        """`read_region` in a worker thread, so many concurrent episodes do not block the event loop."""
        return await asyncio.to_thread(self.read_region, box, size, fill)

    def thumbnail(self, long_side: int) -> Image.Image:
        """The whole slide, long side exactly `long_side`, on white, without guides (thumbnail baseline)."""
        lo, hi = THUMBNAIL_RANGE
        if not lo <= long_side <= hi:
            raise ValueError(f"thumbnail long side {long_side} is outside {lo}..{hi} px")
        image = self.read_region(Box(x=0, y=0, w=self.width, h=self.height), long_side).image
        if max(image.size) < long_side:  # a slide smaller than the thumbnail: the baseline wants exact size
            w, h = output_size(self.width * long_side, self.height * long_side, long_side)
            image = image.resize((w, h), Image.Resampling.LANCZOS)
        return image

    def _render(self, read: Box, level: int, out: tuple[int, int], fill: tuple[int, int, int]) -> Image.Image:
        """Read the level pixels covering `read`, from an origin snapped to the level grid (OpenSlide
        is several times slower at fractional origins), then resample exactly the box to `out`."""
        ds = self.level_downsamples[level]
        lw, lh = self.level_dimensions[level]
        fx0, fy0, fx1, fy1 = read.x / ds, read.y / ds, read.right / ds, read.bottom / ds
        x0, y0 = math.floor(fx0), math.floor(fy0)
        x1, y1 = min(math.ceil(fx1), lw), min(math.ceil(fy1), lh)
        x1, y1 = max(x1, x0 + 1), max(y1, y0 + 1)
        fx1, fy1 = min(fx1, x1), min(fy1, y1)  # level sizes are rounded: stay inside the level
        if self._tiles is not None and self._tiles.has_level(level):
            try:
                image, (ox, oy), r = self._tiles.read(level, x0, y0, x1, y1, (fx1 - fx0) / out[0], fill)
            except SlideUnreadable as exc:  # the tile decoder does not know the region: say which
                raise SlideUnreadable(
                    f"{self.path}: cannot read region {read} at level {level}: {exc}", slide=self.path
                ) from exc
        else:
            try:
                rgba = self._osr.read_region((round(x0 * ds), round(y0 * ds)), level, (x1 - x0, y1 - y0))
            except openslide.OpenSlideError as exc:
                raise SlideUnreadable(
                    f"{self.path}: cannot read region {read} at level {level}: {exc}", slide=self.path
                ) from exc
            image, (ox, oy), r = _flatten(rgba, fill), (x0, y0), 1
        box = ((fx0 - ox) / r, (fy0 - oy) / r, (fx1 - ox) / r, (fy1 - oy) / r)
        if all(float(v).is_integer() for v in box) and (box[2] - box[0], box[3] - box[1]) == out:
            return image if box == (0, 0, *image.size) else image.crop(box)
        return resize(image, out, box, FINAL_RESAMPLE)

    def _probe(self) -> None:
        level = self.level_count - 1
        w, h = self.level_dimensions[level]
        try:
            self._osr.read_region((0, 0), level, (min(w, 16), min(h, 16)))
        except openslide.OpenSlideError as exc:
            raise SlideUnreadable(
                f"{self.path}: opens but its pixels cannot be decoded: {exc}", slide=self.path
            ) from exc


@dataclass
class _Held:
    slide: Slide
    holders: int = 0


_held: dict[tuple[str, int, int, int, int], _Held] = {}  # the slides open through shared_slide
_held_lock = threading.Lock()


@contextmanager
def shared_slide(path: str | Path) -> Iterator[Slide]:
    """`Slide.open` for one of many holders: the episodes of a run that read the same file (the k runs
    of an item, the questions of one slide) share one open slide, so open files and OpenSlide handles
    grow with the distinct slides in flight, not with the episodes (a batch campaign keeps hundreds of
    episodes open while they wait on a round). The slide closes when its last holder leaves; a file
    rewritten meanwhile (another size, time or inode) opens anew. Errors are `Slide.open`'s, per call."""
    path = Path(path)
    try:
        stat = os.stat(path)
    except OSError:
        stat = None
    if stat is None:  # no file: Slide.open says so (SlideMissing), as it would for an episode alone
        with Slide.open(path) as slide:
            yield slide
        return
    key = (str(path), stat.st_dev, stat.st_ino, stat.st_mtime_ns, stat.st_size)
    with _held_lock:
        held = _held.get(key)
        if held is None:
            held = _held[key] = _Held(Slide.open(path))
        held.holders += 1
    try:
        yield held.slide
    finally:
        with _held_lock:
            held.holders -= 1
            last = not held.holders
            if last:
                del _held[key]
        if last:
            held.slide.close()  # outside the lock: it waits for reads still running in threads


def open_slides() -> int:
    """How many slides `shared_slide` holds open now (for tests and benchmarks)."""
    with _held_lock:
        return len(_held)


def _flatten(rgba: Image.Image, fill: tuple[int, int, int]) -> Image.Image:
    """RGBA -> RGB over the fill colour (OpenSlide returns transparent pixels outside the scan)."""
    if rgba.mode != "RGBA":
        return rgba.convert("RGB")
    alpha = rgba.getchannel("A")
    if alpha.getextrema()[0] == 255:
        return rgba.convert("RGB")
    base = Image.new("RGB", rgba.size, fill)
    base.paste(rgba.convert("RGB"), mask=alpha)
    return base


def _float_or_none(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
