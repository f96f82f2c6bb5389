"""Direct JPEG tile decoding for TIFF-based slides (Aperio SVS, generic tiled TIFF): the fast path.

OpenSlide decodes tiles one at a time and composites them into a premultiplied ARGB buffer, and
Pillow then downsizes the full-resolution region. For a crop just under a pyramid boundary that is
20+ megapixels of work on one core. Here the tiles a crop needs are read with `os.pread` and decoded
by libjpeg-turbo on two threads. A crop that shrinks the level by 2x or more decodes each tile
straight at 1/2, 1/4 or 1/8 scale (libjpeg's DCT-domain scaling through Pillow's `draft`): that
skips most of the inverse DCT and the colour conversion and needs no separate reduction pass.
Whatever integer shrink remains is a box reduce per tile, so the final resize (under 2x) works on a
small mosaic. Levels this module does not understand stay with OpenSlide.
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import imagecodecs
import numpy as np
import tifffile
from PIL import Image

from giant.wsi.errors import SlideUnreadable


def _import_cv2() -> ModuleType | None:
    """OpenCV if installed (optional: only the final resize is faster with it, see resize).

    opencv-python bundles its own OpenBLAS, whose worker threads spin for ~0.1 s of CPU after it
    loads: on two cores that halves the speed of the first crops. We use no BLAS from OpenCV, so
    its copy is loaded single-threaded; the variable is read only at load, and restored at once
    so that libraries loaded later keep their threads.
    """
    saved = os.environ.get("OPENBLAS_NUM_THREADS")
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import cv2
    except ImportError:
        return None
    finally:
        if saved is None:
            del os.environ["OPENBLAS_NUM_THREADS"]
        else:
            os.environ["OPENBLAS_NUM_THREADS"] = saved
    return cv2


cv2 = _import_cv2()

DECODE_THREADS = 2
# As Pillow's reducing_gap: box-reduce while at least this many level pixels per output pixel remain.
# 1.0 leaves the final resize at most a 2x shrink; crops stay 30-45 dB PSNR from the authors'
# unreduced Lanczos path (benchmarks/crop_latency.py prints the figure for every case).
REDUCING_GAP = 1.0
_VENDORS = {"aperio", "generic-tiff"}  # TIFF layouts where OpenSlide level i is a plain tiled page
_JPEG, _RGB, _YCBCR = 7, 2, 6  # TIFF codes (JPEG compression; photometric RGB, YCbCr)
# libjpeg-turbo's JCS_EXT_RGBX: 4 bytes a pixel, Pillow's own layout for RGB, so a decoded tile is
# pasted straight from the decoder's buffer (one copy instead of an unpack and a copy).
_JCS_RGB, _JCS_EXT_RGBX = 2, 7
# Scale denominators libjpeg's scaled inverse DCT offers through Pillow's Image.draft, largest first.
DCT_SCALES = (8, 4, 2)
_SOI, _EOI = b"\xff\xd8", b"\xff\xd9"
# APP14 "Adobe" with transform 0: tells libjpeg the components are RGB, as TIFF photometric RGB says.
# Without it libjpeg guesses YCbCr from the component ids Aperio writes, and the colours are wrong.
_ADOBE_RGB = b"\xff\xee\x00\x0eAdobe\x00\x64\x00\x00\x00\x00\x00"

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


@dataclass(frozen=True)
class _Level:
    width: int
    height: int
    tile_w: int
    tile_h: int
    across: int
    offsets: np.ndarray
    counts: np.ndarray
    tables: bytes | None
    colorspace: int | None
    header: bytes  # replaces a tile's SOI to make it a complete JPEG that Pillow can decode at scale


class TileReader:
    """Reads level regions of one slide straight from its JPEG tiles; safe to share across threads."""

    def __init__(self, path: Path, levels: dict[int, _Level]) -> None:
        self._fd = os.open(path, os.O_RDONLY)
        self._size = os.fstat(self._fd).st_size
        self._levels = levels

    @classmethod
    def for_slide(
        cls, path: Path, vendor: str | None, level_dimensions: tuple[tuple[int, int], ...]
    ) -> TileReader | None:
        """A reader for the levels stored as plain JPEG tiles, or None when no level qualifies."""
        if vendor not in _VENDORS:
            return None
        try:
            with tifffile.TiffFile(path) as tif:
                levels = _match_levels(tif.pages, level_dimensions)
        except (tifffile.TiffFileError, OSError, ValueError, IndexError, KeyError):
            return None
        return cls(path, levels) if levels else None

    def close(self) -> None:
        os.close(self._fd)

    def has_level(self, level: int) -> bool:
        return level in self._levels

    def read(
        self, level: int, x0: int, y0: int, x1: int, y1: int, shrink: float, fill: tuple[int, int, int]
    ) -> tuple[Image.Image, tuple[int, int], int]:
        """Level pixels [x0, x1) x [y0, y1) (inside the level), shrunk by an integer factor that
        leaves at least REDUCING_GAP times the output resolution (`shrink` is level pixels per
        output pixel): DCT scaling first, then a box reduce for the rest.

        Returns the image, its origin in level pixels (a multiple of the factor, at most one reduced
        pixel before (x0, y0)) and the factor. Missing tiles (byte count 0) are painted with `fill`.
        """
        lv = self._levels[level]
        scale, reduce = shrink_factors(lv.tile_w, lv.tile_h, shrink)
        factor = scale * reduce
        tw, th = lv.tile_w // factor, lv.tile_h // factor
        # Reduced pixels [mx0, mx1) x [my0, my1): the tiles are decoded straight into the crop's
        # extent, so nothing outside it is copied, converted or resampled later.
        mx0, my0, mx1, my1 = x0 // factor, y0 // factor, -(-x1 // factor), -(-y1 // factor)
        mosaic = Image.new("RGB", (mx1 - mx0, my1 - my0), None)  # every pixel is pasted below
        tiles = [
            (r, c)
            for r in range(y0 // lv.tile_h, -(-y1 // lv.tile_h))
            for c in range(x0 // lv.tile_w, -(-x1 // lv.tile_w))
        ]
        pending = iter(tiles)  # shared by the workers: next() on a list iterator is atomic

        def work() -> None:
            scratch = np.empty((lv.tile_h, lv.tile_w, 4), dtype=np.uint8) if scale == 1 else None
            for r, c in pending:
                corner = (c * tw - mx0, r * th - my0)  # paste() clips what lies outside the crop
                tile = self._tile(lv, r * lv.across + c, scale, reduce, scratch)
                if tile is None:
                    mosaic.paste(fill, (*corner, corner[0] + tw, corner[1] + th))
                else:
                    mosaic.paste(tile, corner)  # disjoint areas: safe from several threads

        _on_threads(work, parallel=len(tiles) >= 2 * DECODE_THREADS)
        return mosaic, (mx0 * factor, my0 * factor), factor

    def _tile(
        self, lv: _Level, index: int, scale: int, reduce: int, scratch: np.ndarray | None
    ) -> Image.Image | None:
        """Tile `index` at 1/(scale * reduce) of its size, or None for a missing tile.

        Unscaled tiles go to imagecodecs (into `scratch`), which decodes faster than Pillow; scaled
        ones to Pillow, whose `draft` reaches libjpeg's scaled inverse DCT.
        """
        count, offset = int(lv.counts[index]), int(lv.offsets[index])
        if count == 0:
            return None
        if offset + count > self._size:
            raise SlideUnreadable(
                f"tile {index} ends at byte {offset + count}, past the end of the file (truncated?)"
            )
        data = os.pread(self._fd, count, offset)
        try:
            if scale == 1:
                tile = imagecodecs.jpeg8_decode(
                    data, tables=lv.tables, colorspace=lv.colorspace, outcolorspace=_JCS_EXT_RGBX, out=scratch
                )
                height, width = tile.shape[:2]
                # shares `tile`'s memory (read-only); pasting onto RGB copies the X byte harmlessly
                image = Image.frombuffer("RGBA", (width, height), tile, "raw", "RGBA", 0, 1)
            else:
                image = _decode_scaled(lv.header + data[len(_SOI) :], scale)
        except (imagecodecs.Jpeg8Error, OSError, SyntaxError, ValueError) as exc:
            raise SlideUnreadable(
                f"tile {index} cannot be decoded as a {lv.tile_w}x{lv.tile_h} RGB tile: {exc}"
            ) from exc
        if reduce > 1:
            image = image.reduce(reduce)
        factor = scale * reduce
        if image.size != (lv.tile_w // factor, lv.tile_h // factor):
            raise SlideUnreadable(
                f"tile {index} decodes to {image.size} at 1/{factor}, not a {lv.tile_w}x{lv.tile_h} tile"
            )
        return image


def shrink_factors(tile_w: int, tile_h: int, shrink: float) -> tuple[int, int]:
    """(DCT scale, box reduce) for a crop that shrinks the level by `shrink`: the largest libjpeg
    scale, then the largest further integer box reduce, with the product at most shrink /
    REDUCING_GAP and both dividing the tile size (so reduced tiles still join without seams)."""
    limit = max(1, int(shrink / REDUCING_GAP))
    scale = next((s for s in DCT_SCALES if s <= limit and tile_w % s == tile_h % s == 0), 1)
    w, h = tile_w // scale, tile_h // scale
    reduce = max(r for r in range(1, limit // scale + 1) if w % r == h % r == 0)
    return scale, reduce


def _decode_scaled(stream: bytes, scale: int) -> Image.Image:
    """Decode a complete JPEG stream at 1/`scale` of its size with libjpeg's scaled inverse DCT."""
    with Image.open(io.BytesIO(stream), formats=("JPEG",)) as image:
        width, height = image.size
        image.draft("RGB", (width // scale, height // scale))
        image.load()
        return image


def _match_levels(
    pages: tifffile.TiffPages, level_dimensions: tuple[tuple[int, int], ...]
) -> dict[int, _Level]:
    """Pair OpenSlide levels with tiled RGB JPEG pages of the same size (in file order)."""
    levels: dict[int, _Level] = {}
    used: set[int] = set()
    for level, (width, height) in enumerate(level_dimensions):
        for i, page in enumerate(pages):
            if i in used or not isinstance(page, tifffile.TiffPage):
                continue
            if (page.imagewidth, page.imagelength) != (width, height) or not page.is_tiled:
                continue
            used.add(i)
            if _plain_jpeg_rgb(page):
                rgb = page.photometric == _RGB and not page.is_jfif
                levels[level] = _Level(
                    width=width,
                    height=height,
                    tile_w=page.tilewidth,
                    tile_h=page.tilelength,
                    across=-(-width // page.tilewidth),
                    offsets=np.asarray(page.dataoffsets, dtype=np.int64),
                    counts=np.asarray(page.databytecounts, dtype=np.int64),
                    tables=page.jpegtables or None,
                    colorspace=_JCS_RGB if rgb else None,
                    header=_SOI + (_ADOBE_RGB if rgb else b"") + _table_segments(page.jpegtables),
                )
            break
    return levels


def _table_segments(tables: bytes | None) -> bytes:
    """The DQT/DHT segments of a TIFF JPEGTables stream (an abbreviated JPEG: SOI, tables, EOI)."""
    if not tables:
        return b""
    if not (tables.startswith(_SOI) and tables.endswith(_EOI)):
        raise ValueError("JPEGTables is not an SOI ... EOI stream")
    return tables[len(_SOI) : -len(_EOI)]


def _plain_jpeg_rgb(page: tifffile.TiffPage) -> bool:
    return (
        page.compression == _JPEG
        and page.photometric in (_RGB, _YCBCR)
        and page.samplesperpixel == 3
        and page.bitspersample == 8
        and page.planarconfig == 1
        and page.tiledepth == 1
        and not page.extrasamples
    )


def resize(
    image: Image.Image,
    out: tuple[int, int],
    box: tuple[float, float, float, float],
    resample: Image.Resampling,
) -> Image.Image:
    """`image.resize(out, resample, box=box)`, fast: the final resize otherwise costs as much as
    decoding the tiles.

    A bilinear shrink by less than 2x (what is left after DCT scaling and box reduction) goes to
    OpenCV when it is installed: its SIMD bilinear warp is 3x cheaper than Pillow's and, with no
    aliasing to speak of below 2x, as close to Lanczos. Otherwise Pillow resamples horizontal
    bands on the decode threads: it releases the GIL and each band samples the whole source
    image, so the bands join seamlessly.
    """
    width, height = out
    x0, y0, x1, y1 = box
    if cv2 is not None and resample == Image.Resampling.BILINEAR and max(x1 - x0, y1 - y0) < 2 * max(out):
        return _warp_bilinear(image, out, box)
    if height < 64 * DECODE_THREADS:
        return image.resize(out, resample, box=box)
    step = (y1 - y0) / height
    edges = [round(i * height / DECODE_THREADS) for i in range(DECODE_THREADS + 1)]
    result = Image.new("RGB", out, None)  # every row is pasted below
    pending = iter(range(DECODE_THREADS))

    def work() -> None:
        for i in pending:
            a, b = edges[i], edges[i + 1]
            band = image.resize((width, b - a), resample, box=(x0, y0 + a * step, x1, y0 + b * step))
            result.paste(band, (0, a))  # disjoint rows of `result`

    _on_threads(work, parallel=True)
    return result


def _warp_bilinear(
    image: Image.Image, out: tuple[int, int], box: tuple[float, float, float, float]
) -> Image.Image:
    """Plain (2x2) bilinear sampling of `box` at `out` pixel centres, as Pillow's box convention
    places them: output pixel i samples x0 + (i + 0.5) * sx in coordinates where pixel j spans
    [j, j + 1), i.e. x0 + (i + 0.5) * sx - 0.5 in OpenCV's pixel-centre coordinates."""
    assert cv2 is not None
    x0, y0, x1, y1 = box
    sx, sy = (x1 - x0) / out[0], (y1 - y0) / out[1]
    inverse = np.array([[sx, 0.0, x0 + 0.5 * sx - 0.5], [0.0, sy, y0 + 0.5 * sy - 0.5]])
    flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
    pixels = cv2.warpAffine(np.asarray(image), inverse, out, flags=flags, borderMode=cv2.BORDER_REPLICATE)
    return Image.fromarray(pixels)


def _on_threads(work: Callable[[], None], *, parallel: bool) -> None:
    """Run `work` (which pulls jobs from a shared iterator) on this thread and, if `parallel`, on
    the pool's threads too; return once every copy has finished, so no worker still touches the
    file or the buffers afterwards. Re-raises the first worker's error.

    A helper still queued when this thread runs out of jobs (the pool is busy with other reads) is
    cancelled rather than waited for: there is nothing left for it to do.
    """
    if not parallel:
        work()
        return
    helpers = [_executor().submit(work) for _ in range(DECODE_THREADS - 1)]
    try:
        work()
    finally:
        for helper in helpers:
            helper.cancel()
        wait(helpers)
    for helper in helpers:
        if not helper.cancelled():
            helper.result()


def _executor() -> ThreadPoolExecutor:
    """One small pool per process: decoding is CPU-bound, more threads than cores only add overhead.
    The calling thread works too, so the pool has DECODE_THREADS - 1 threads."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(
                max_workers=max(1, DECODE_THREADS - 1), thread_name_prefix="giant-tiles"
            )
        return _pool
