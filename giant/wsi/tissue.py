"""Tissue detection and tissue-biased box sampling (patch baseline, random-region agent).

The mask is Otsu's threshold on HSV saturation of a low-resolution view (stained tissue is
saturated, glass is white or grey), with small specks removed and small holes filled: the usual
first step of WSI pipelines (e.g. CLAM). Fractions of level-0 boxes come from an integral image, so
sampling thousands of candidate boxes costs nothing next to reading one crop.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
from PIL import Image
from scipy import ndimage

from giant.core import Box
from giant.wsi.errors import SlideUnreadable
from giant.wsi.slide import Slide

log = logging.getLogger(__name__)

MASK_LONG_SIDE = 2048  # mask resolution: a 224 px patch of a 100k px slide still spans ~5 mask pixels
# The crop tissue fractions' mask (recorded per crop by the episode, read by the run report): coarser
# than the sampler's, as it is built once per slide of a job; benchmarks/report_tissue.py measures both.
CROP_MASK_SIDE = 1024
MIN_SATURATION = 20  # Otsu never goes below this (0..255): a slide of pure glass has no tissue
SMALL_AREA = 1e-4  # specks and holes below this fraction of the mask area are removed / filled
ATTEMPTS_PER_BOX = 200
CROP_MASKS_KEPT = 256  # crop masks kept for the slides of a run (~100 KB each at CROP_MASK_SIDE)


@dataclass(frozen=True, eq=False)
class TissueMask:
    """A boolean tissue mask covering the whole slide; `width` x `height` are level-0 pixels."""

    mask: np.ndarray
    width: int
    height: int
    _integral: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        integral = np.zeros((self.mask.shape[0] + 1, self.mask.shape[1] + 1), dtype=np.int64)
        integral[1:, 1:] = self.mask.cumsum(axis=0).cumsum(axis=1)
        object.__setattr__(self, "_integral", integral)

    @classmethod
    def from_slide(cls, slide: Slide, long_side: int = MASK_LONG_SIDE) -> TissueMask:
        """`long_side`: the mask's resolution; a coarser one is faster for boxes far above patch size."""
        whole = Box(x=0, y=0, w=slide.width, h=slide.height)
        image = slide.read_region(whole, long_side).image
        return cls.from_image(image, slide.width, slide.height)

    @classmethod
    def from_image(cls, image: Image.Image, width: int, height: int) -> TissueMask:
        """Mask from a low-resolution RGB view of a `width` x `height` (level-0) slide."""
        saturation = np.asarray(image.convert("RGB").convert("HSV"))[..., 1]
        saturation = ndimage.median_filter(saturation, size=3)
        tissue = saturation > max(otsu_threshold(saturation), MIN_SATURATION)
        min_area = max(4, round(SMALL_AREA * tissue.size))
        tissue = _drop_small(tissue, min_area)
        tissue = ~_drop_small(~tissue, min_area)
        return cls(mask=tissue, width=width, height=height)

    @property
    def fraction_total(self) -> float:
        return float(self.mask.mean())

    def fraction(self, box: Box) -> float:
        """Tissue fraction of the part of `box` inside the slide (0.0 if none of it is)."""
        x0, x1 = self._span(box.x, box.right, self.width, self.mask.shape[1])
        y0, y1 = self._span(box.y, box.bottom, self.height, self.mask.shape[0])
        if x1 <= x0 or y1 <= y0:
            return 0.0
        s = self._integral
        total = s[y1, x1] - s[y0, x1] - s[y1, x0] + s[y0, x0]
        return float(total) / ((x1 - x0) * (y1 - y0))

    @staticmethod
    def _span(lo: int, hi: int, extent: int, cells: int) -> tuple[int, int]:
        """Mask cells overlapping level-0 [lo, hi): at least one cell for any box inside the slide."""
        lo, hi = max(lo, 0), min(hi, extent)
        if hi <= lo:
            return (0, 0)
        a = min(int(lo * cells / extent), cells - 1)
        b = max(a + 1, min(cells, -(-hi * cells // extent)))
        return (a, b)


class CropTissue:
    """A slide's crop-fraction mask as an episode keeps it between crops: one bit per mask cell (~100 KB
    at CROP_MASK_SIDE, where a TissueMask with its integral image takes ~7 MB, which hundreds of
    episodes waiting on a batch round would each hold), and one per slide, shared (`crop_tissue`).
    `fraction` gives exactly TissueMask.fraction's values: it counts the same cells."""

    def __init__(self, mask: TissueMask) -> None:
        self.width, self.height = mask.width, mask.height
        self.shape: tuple[int, int] = (int(mask.mask.shape[0]), int(mask.mask.shape[1]))
        self._bits = np.packbits(mask.mask, axis=1)

    @classmethod
    def from_array(cls, cells: np.ndarray, width: int, height: int) -> CropTissue:
        """Any boolean grid over a `width` x `height` level-0 area (an annotation's target classes)."""
        grid = cls.__new__(cls)
        grid.width, grid.height = width, height
        grid.shape = (int(cells.shape[0]), int(cells.shape[1]))
        grid._bits = np.packbits(cells.astype(bool, copy=False), axis=1)
        return grid

    def cells(self) -> np.ndarray:
        """The grid as booleans (rows x cols): tissue coverage counts its cells."""
        return np.unpackbits(self._bits, axis=1, count=self.shape[1]).astype(bool)

    def fraction(self, box: Box) -> float:
        rows, cols = self.shape
        x0, x1 = TissueMask._span(box.x, box.right, self.width, cols)
        y0, y1 = TissueMask._span(box.y, box.bottom, self.height, rows)
        if x1 <= x0 or y1 <= y0:
            return 0.0
        cells = np.unpackbits(self._bits[y0:y1], axis=1, count=cols)[:, x0:x1]
        return float(np.count_nonzero(cells)) / ((x1 - x0) * (y1 - y0))


_crop_masks: OrderedDict[tuple[str, int, int], CropTissue] = OrderedDict()
_building: dict[tuple[str, int, int], threading.Lock] = {}
_crop_lock = threading.Lock()


def crop_tissue(slide: Slide) -> CropTissue:
    """The CROP_MASK_SIDE mask of `slide`'s file, built once for every episode that crops it (the
    last CROP_MASKS_KEPT slides are kept; a rewritten file is segmented again). Blocking: call it
    from a worker thread. Raises the slide's SlideError."""
    try:
        stat = os.stat(slide.path)
    except OSError as exc:
        raise SlideUnreadable(f"{slide.path}: {exc}", slide=slide.path) from exc
    key = (str(slide.path), stat.st_mtime_ns, stat.st_size)
    with _crop_lock:
        if key in _crop_masks:
            _crop_masks.move_to_end(key)
            return _crop_masks[key]
        building = _building.setdefault(key, threading.Lock())
    try:
        with building:  # one build per slide, however many episodes ask for it at once
            with _crop_lock:
                done = _crop_masks.get(key)
            if done is None:
                done = CropTissue(TissueMask.from_slide(slide, CROP_MASK_SIDE))
                with _crop_lock:
                    _crop_masks[key] = done
                    while len(_crop_masks) > CROP_MASKS_KEPT:
                        _crop_masks.popitem(last=False)
            return done
    finally:
        with _crop_lock:
            _building.pop(key, None)


def sample_boxes(
    mask: TissueMask,
    n: int,
    min_side: int,
    max_side: int,
    min_tissue: float,
    rng: np.random.Generator,
) -> list[Box]:
    """`n` square boxes inside the slide, side uniform in [min_side, max_side], tissue >= min_tissue.

    Candidates are centred on random tissue cells (uniform over tissue), up to 200 attempts per box.
    If too few pass, the best remaining candidates (highest tissue fraction) fill the list, with a
    warning: callers always get `n` boxes, unless the slide is smaller than `min_side`.
    """
    if n < 0 or min_side < 1 or max_side < min_side or not 0.0 <= min_tissue <= 1.0:
        raise ValueError(
            f"bad sampling request n={n}, sides {min_side}..{max_side}, min_tissue={min_tissue}: "
            "need n >= 0, 1 <= min_side <= max_side, 0 <= min_tissue <= 1"
        )
    limit = min(mask.width, mask.height)
    if min_side > limit:
        raise ValueError(f"boxes of side {min_side} do not fit in the {mask.width}x{mask.height} slide")
    cells = np.argwhere(mask.mask)
    cell_w, cell_h = mask.width / mask.mask.shape[1], mask.height / mask.mask.shape[0]
    accepted: list[Box] = []
    rejected: list[tuple[float, Box]] = []
    for _ in range(ATTEMPTS_PER_BOX * n):
        if len(accepted) == n:
            break
        side = int(rng.integers(min_side, min(max_side, limit) + 1))
        if len(cells):
            row, col = cells[rng.integers(len(cells))]
            cx, cy = (col + rng.random()) * cell_w, (row + rng.random()) * cell_h
        else:
            cx, cy = rng.random() * mask.width, rng.random() * mask.height
        x = int(np.clip(round(cx - side / 2), 0, mask.width - side))
        y = int(np.clip(round(cy - side / 2), 0, mask.height - side))
        box = Box(x=x, y=y, w=side, h=side)
        fraction = mask.fraction(box)
        if fraction >= min_tissue:
            accepted.append(box)
        else:
            rejected.append((fraction, box))
    if len(accepted) < n:
        log.warning(
            "only %d of %d boxes reach %.0f%% tissue after %d attempts; using the best of the rest",
            len(accepted),
            n,
            100 * min_tissue,
            ATTEMPTS_PER_BOX * n,
        )
        rejected.sort(key=lambda item: -item[0])
        accepted.extend(box for _, box in rejected[: n - len(accepted)])
    return accepted


def place_distinct(
    mask: TissueMask, n: int, side: int, min_tissue: float, rng: np.random.Generator
) -> list[Box]:
    """Up to `n` square boxes of `side` that reach `min_tissue` and overlap neither each other nor the
    slide's edge; fewer (perhaps none) where the tissue has no room for them (a small biopsy at a low
    magnification). Candidates as `sample_boxes` draws them, ATTEMPTS_PER_BOX per box."""
    if n < 0 or side < 1 or not 0.0 <= min_tissue <= 1.0:
        raise ValueError(f"bad placement request n={n}, side {side}, min_tissue={min_tissue}")
    if side > min(mask.width, mask.height):
        return []
    cells = np.argwhere(mask.mask)
    cell_w, cell_h = mask.width / mask.mask.shape[1], mask.height / mask.mask.shape[0]
    placed: list[Box] = []
    for _ in range(ATTEMPTS_PER_BOX * n):
        if len(placed) == n or not len(cells):
            break
        row, col = cells[rng.integers(len(cells))]
        cx, cy = (col + rng.random()) * cell_w, (row + rng.random()) * cell_h
        x = int(np.clip(round(cx - side / 2), 0, mask.width - side))
        y = int(np.clip(round(cy - side / 2), 0, mask.height - side))
        box = Box(x=x, y=y, w=side, h=side)
        if all(_apart(box, other) for other in placed) and mask.fraction(box) >= min_tissue:
            placed.append(box)
    return placed


def _apart(a: Box, b: Box) -> bool:
    return a.right <= b.x or b.right <= a.x or a.bottom <= b.y or b.bottom <= a.y


def otsu_threshold(values: np.ndarray) -> int:
    """Otsu's threshold for 8-bit values: maximises the between-class variance."""
    hist = np.bincount(values.ravel(), minlength=256).astype(np.float64)
    weight0 = np.cumsum(hist)
    weight1 = weight0[-1] - weight0
    sum0 = np.cumsum(hist * np.arange(256))
    mean0 = sum0 / np.maximum(weight0, 1)
    mean1 = (sum0[-1] - sum0) / np.maximum(weight1, 1)
    between = weight0 * weight1 * (mean0 - mean1) ** 2
    return int(np.argmax(between))


def _drop_small(mask: np.ndarray, min_area: int) -> np.ndarray:
    labels, count = ndimage.label(mask)
    if count == 0:
        return mask
    areas = np.bincount(labels.ravel())
    keep = areas >= min_area
    keep[0] = False
    return keep[labels]
