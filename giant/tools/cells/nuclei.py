"""Classical nuclei detection on an H&E region: colour deconvolution, a threshold, a watershed.

No weights: the hematoxylin channel is separated by Ruifrok and Johnston's colour deconvolution (the
stain vectors are a setting; scikit-image's `rgb2hed` uses the same defaults), thresholded (Otsu's
threshold over the tissue, never below a floor, so a region without nuclei finds none), and touching
nuclei are split by a watershed on the distance to the background. Every size is given in microns and
turned into pixels by the region's µm/px, so the same settings hold at every magnification.

This is not a trained segmenter: overlapping or faint nuclei, and dark non-nuclear material, are
counted as the threshold sees them (docs/tools.md says so to the user).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np
from scipy import ndimage

# Ruifrok & Johnston's optical densities of hematoxylin, eosin and DAB (scikit-image's rgb_from_hed).
RUIFROK_HED = ((0.65, 0.70, 0.29), (0.07, 0.99, 0.11), (0.27, 0.57, 0.78))


@dataclass(frozen=True)
class Thresholds:
    """The detection's settings in physical units (giant.tools.cells.settings holds their values)."""

    stains: Sequence[Sequence[float]]  # the H, E and residual stains' RGB optical densities (rows)
    tissue_od: float  # summed RGB optical density above which a pixel is tissue
    min_hematoxylin: float  # the hematoxylin threshold's floor (optical density)
    min_area_um2: float  # smaller objects are noise, not nuclei
    smooth_um: float  # Gaussian smoothing of the hematoxylin channel before the threshold


@dataclass(frozen=True)
class Nuclei:
    """What was found in one region: one entry per nucleus, and the region's tissue fraction."""

    labels: np.ndarray  # int32, 0 = not a nucleus, k = the k-th nucleus
    areas_um2: list[float]
    solidity: list[float]  # area / convex hull area, 1 for a convex outline
    tissue_fraction: float
    threshold: float  # the hematoxylin optical density used
    tissue_mm2: float

    @property
    def count(self) -> int:
        return len(self.areas_um2)

    @property
    def density_per_mm2(self) -> float:
        """Nuclei per mm² of tissue (0 where the region has none)."""
        return self.count / self.tissue_mm2 if self.tissue_mm2 > 0 else 0.0

    @property
    def mean_area_um2(self) -> float:
        return float(np.mean(self.areas_um2)) if self.areas_um2 else 0.0

    @property
    def sd_area_um2(self) -> float:
        return float(np.std(self.areas_um2)) if self.areas_um2 else 0.0

    @property
    def irregularity(self) -> float:
        """1 - the mean solidity: 0 when every outline is convex, larger as outlines get ragged."""
        return float(1.0 - np.mean(self.solidity)) if self.solidity else 0.0


# optical density of each 8-bit channel value (0 counted as 1: a black pixel is not infinitely dense)
_OD = -np.log10(np.maximum(np.arange(256, dtype=np.float32), 1.0) / 255.0)


def stain_densities(rgb: np.ndarray, stains: Sequence[Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """The hematoxylin optical density of each pixel, and each pixel's summed RGB optical density.
    `rgb` holds 8-bit values (uint8, or floats from 0 to 255 for a mixed colour)."""
    if rgb.dtype == np.uint8:
        od = [_OD[rgb[..., c]] for c in range(3)]
    else:
        od = [-np.log10(np.maximum(rgb[..., c].astype(np.float32), 1.0) / 255.0) for c in range(3)]
    matrix = np.asarray(stains, dtype=np.float64)
    matrix = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    unmix = np.linalg.inv(matrix).astype(np.float32)  # od = concentrations @ matrix
    hematoxylin = od[0] * unmix[0, 0] + od[1] * unmix[1, 0] + od[2] * unmix[2, 0]
    return hematoxylin, od[0] + od[1] + od[2]


def _otsu(values: np.ndarray) -> float:
    """Otsu's threshold of a sample of hematoxylin optical densities."""
    lo, hi = float(values.min()), float(values.max())
    if hi - lo < 1e-6:
        return hi
    scaled = np.round((values - lo) / (hi - lo) * 255).astype(np.uint8)
    level, _ = cv2.threshold(scaled.reshape(1, -1), 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    return lo + (float(level) + 0.5) / 255 * (hi - lo)


def _half_way(rgb: np.ndarray, hematoxylin: np.ndarray, tissue: np.ndarray, t: Thresholds) -> float:
    """The hematoxylin threshold: that of a pixel half nucleus, half its surroundings (the typical
    colours of the two sides of Otsu's split, mixed as light mixes), never below the floor. A pixel on
    a nucleus's edge then falls on the threshold, so areas are neither a rim too small nor too large
    (a threshold set in optical density alone, which is not linear in light, shrinks every nucleus)."""
    step = max(1, int(tissue.sum()) // 200_000)
    sample = hematoxylin[tissue][::step]
    if sample.size == 0:  # no tissue, so no nucleus whatever the threshold
        return t.min_hematoxylin
    split = max(t.min_hematoxylin, _otsu(sample))
    colours = rgb[tissue][::step].astype(np.float32)
    dark = sample > split
    if not dark.any() or dark.all():
        return split
    mixed = (np.median(colours[dark], axis=0) + np.median(colours[~dark], axis=0)) / 2
    threshold, _ = stain_densities(mixed.reshape(1, 1, 3), t.stains)
    return max(t.min_hematoxylin, float(threshold[0, 0]))


def detect(rgb: np.ndarray, mpp: float, t: Thresholds) -> Nuclei:
    """Nuclei of an RGB region (uint8, H x W x 3) read at `mpp` µm per pixel (square pixels).

    The region is smoothed as light (its RGB values) before the stains are separated, so blurring
    moves no nucleus's edge."""
    sigma = t.smooth_um / mpp
    smooth = cv2.GaussianBlur(rgb, (0, 0), sigma) if sigma > 0.3 else rgb
    hematoxylin, od = stain_densities(smooth, t.stains)
    tissue = od > t.tissue_od
    px_area = mpp * mpp
    tissue_mm2 = float(tissue.sum()) * px_area / 1e6
    threshold = _half_way(smooth, hematoxylin, tissue, t)
    mask = (hematoxylin > threshold) & tissue
    mask = _fill_holes(cv2.morphologyEx(mask.astype(np.uint8), cv2.MORPH_OPEN, _CROSS))
    labels = _split(mask, math.sqrt(t.min_area_um2 / math.pi) / mpp)
    areas: list[float] = []
    solidity: list[float] = []
    kept = np.zeros(labels.max() + 1, dtype=np.int32)
    for index, where in enumerate(ndimage.find_objects(labels), start=1):
        if where is None:
            continue
        piece = (labels[where] == index).astype(np.uint8)
        area = float(piece.sum()) * px_area
        if area < t.min_area_um2:
            continue
        areas.append(area)
        solidity.append(_solidity(piece))
        kept[index] = len(areas)
    fraction = float(tissue.mean()) if tissue.size else 0.0
    return Nuclei(kept[labels], areas, solidity, fraction, threshold, tissue_mm2)


_CROSS = cv2.getStructuringElement(cv2.MORPH_CROSS, (3, 3))


def _fill_holes(mask: np.ndarray) -> np.ndarray:
    """The mask with every enclosed hole filled: what the border's flood does not reach is inside."""
    padded = np.pad(mask, 1)
    reach = np.zeros((padded.shape[0] + 2, padded.shape[1] + 2), np.uint8)
    cv2.floodFill(padded, reach, (0, 0), 1)  # the outside becomes 1 with the mask; holes stay 0
    return (padded[1:-1, 1:-1] == 0) | mask.astype(bool)


SAME_NUCLEUS = 1.5  # two seeds closer than this many times the larger one's depth are one nucleus
LEVEL_STEP = 0.5  # pixels of distance between the watershed's flooding levels


def _split(mask: np.ndarray, min_radius_px: float) -> np.ndarray:
    """The mask's pieces, each touching group of nuclei split by a watershed of the distance to the
    background: seeded at the distance's local maxima (at least a minimal nucleus radius apart, seeds
    within 1.5 depths of a deeper one merged, so an oval gives one), flooded level by level from the
    deepest. Only pieces with two seeds or more are flooded; the rest keep their piece's label."""
    pieces, count = ndimage.label(mask)
    if count == 0:
        return pieces.astype(np.int32)
    distance = cv2.distanceTransform(mask.astype(np.uint8), cv2.DIST_L2, 5)
    size = max(3, 2 * round(min_radius_px) + 1)
    peaks = (distance == cv2.dilate(distance, np.ones((size, size), np.uint8))) & (
        distance >= 0.5 * min_radius_px
    )
    where = np.argwhere(peaks)
    owner = pieces[peaks]
    labels = pieces.astype(np.int32)
    crowded = np.flatnonzero(np.bincount(owner, minlength=count + 1) >= 2)
    if crowded.size == 0:
        return labels
    boxes = ndimage.find_objects(pieces)
    next_label = count + 1
    for piece in crowded:
        seeds = _seeds(where[owner == piece], distance)
        if len(seeds) < 2:
            continue
        box = boxes[piece - 1]
        assert box is not None
        inside = pieces[box] == piece
        local = np.zeros(inside.shape, dtype=np.int32)
        for n, (row, col) in enumerate(seeds):
            local[row - box[0].start, col - box[1].start] = next_label + n
        next_label += len(seeds)
        labels[box][inside] = _flood(local, np.where(inside, distance[box], -1.0))[inside]
    return labels


def _seeds(points: np.ndarray, distance: np.ndarray) -> list[tuple[int, int]]:
    """One seed per nucleus among a piece's peak pixels: deepest first, a peak within SAME_NUCLEUS
    depths of a kept seed dropped (a plateau's pixels, an oval's ridge)."""
    depth = distance[points[:, 0], points[:, 1]]
    kept: list[tuple[int, int]] = []
    kept_depth: list[float] = []
    for index in np.argsort(-depth, kind="stable"):
        row, col = (int(v) for v in points[index])
        if all(
            math.hypot(row - r, col - c) >= SAME_NUCLEUS * d
            for (r, c), d in zip(kept, kept_depth, strict=True)
        ):
            kept.append((row, col))
            kept_depth.append(float(depth[index]))
    return kept


def _flood(labels: np.ndarray, distance: np.ndarray) -> np.ndarray:
    """Grow the seeds in `labels` over pixels of `distance` >= each level in turn, deepest first
    (distance -1 is outside the piece): a watershed on the inverted distance, by levels."""
    seeds = np.unique(labels[labels > 0])
    local = np.searchsorted(seeds, labels).astype(np.float32) + (labels > 0)  # 1..k, 0 unlabelled
    local[labels == 0] = 0
    level = float(distance.max())
    while level > -0.5:
        level = max(level - LEVEL_STEP, 0.0) if level > 0 else -1.0
        allowed = distance >= max(level, 0.0)
        while True:
            grown = cv2.dilate(local, _CROSS)
            new = allowed & (local == 0) & (grown > 0)
            if not new.any():
                break
            local[new] = grown[new]
    out = np.zeros(labels.shape, dtype=np.int32)
    found = local > 0
    out[found] = seeds[local[found].astype(np.int64) - 1]
    return out


def _solidity(piece: np.ndarray) -> float:
    contours, _ = cv2.findContours(piece, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    hull_area = cv2.contourArea(cv2.convexHull(np.concatenate(contours)))
    # pixel counts against the hull through pixel centres: add half a pixel's border to the hull
    perimeter = cv2.arcLength(cv2.convexHull(np.concatenate(contours)), closed=True)
    hull = hull_area + perimeter / 2 + 1
    return float(min(1.0, piece.sum() / hull)) if hull > 0 else 1.0


def outlines(labels: np.ndarray) -> np.ndarray:
    """A boolean image of the lines between touching nuclei: a nucleus's pixels with a neighbour in
    another nucleus."""
    found = labels > 0
    higher = ndimage.maximum_filter(labels, size=3) > labels
    lower = ndimage.minimum_filter(np.where(found, labels, labels.max() + 1), size=3) < labels
    return found & (higher | lower)
