"""A slide's annotations as a boolean grid of its target classes, from the two formats people have:

- GeoJSON as QuPath exports it: a FeatureCollection of Polygon / MultiPolygon features in level-0 pixel
  coordinates, each with `properties.classification.name` (a plain string `classification` or `name`
  is read too). Target polygons are drawn onto a grid of ANNOTATION_SIDE cells on the long side; a
  polygon's later rings are holes.
- Label masks: an image whose pixel values are classes (the first channel of an RGB file, as PANDA's
  `<image_id>_mask.tiff`). A pyramidal TIFF is read at its coarsest level still at least MASK_LEVEL_SIDE
  on the long side, never whole at level 0 (a PANDA mask is tens of thousands of pixels on a side); a
  flat image is read as it is, up to MAX_FLAT_PIXELS. `downsample` is level-0 pixels per mask pixel
  (None: the slide's width over the mask's).

The grid is a giant.wsi.tissue.CropTissue (one bit per cell), so a crop's target fraction counts cells
the way its tissue fraction does.

A file is checked before it is used, because a wrong one would count as annotated misses: a GeoJSON
target polygon needs numeric, finite coordinates inside the slide, rings that enclose an area and a
geometry that is an object; a mask needs the slide's aspect (MASK_ASPECT_TOLERANCE). Anything else is
an AnnotationError naming the file, the feature and the fix: the caller warns once and leaves the
slide not annotated.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping
from pathlib import Path

import numpy as np
import openslide
import tifffile
from PIL import Image, ImageDraw
from scipy import ndimage

from giant.wsi.tissue import CropTissue

ANNOTATION_SIDE = 2048  # cells on the long side of a GeoJSON grid (a 24 px marker of a 3200 px slide: 15)
# A pyramidal mask is read at its coarsest level at least this long: PANDA's level 2 (1/16, ~8 µm per
# cell, ~12 MB as RGBA) rather than level 1 (~190 MB); a 1 µm/px crop then spans over a hundred cells.
MASK_LEVEL_SIDE = 1024
MAX_FLAT_PIXELS = 16_000_000  # read whole at most this (64 MB as RGBA): a larger mask must be a pyramid
# A mask and its slide may differ in aspect by rounding at a coarse level (under 0.1% at 1024 px), not
# by this much: a mask of another slide, or cropped, would put the targets in the wrong places.
MASK_ASPECT_TOLERANCE = 0.02

TIFF_SUFFIXES = (".tif", ".tiff")


class AnnotationError(ValueError):
    """An annotation file that cannot be read as its format; the message names the file and the fix."""


Rings = list[list[tuple[float, float]]]  # closed rings in level-0 px


def geojson_polygons(path: Path, targets: Collection[str]) -> list[Rings]:
    """The target classes' polygons of a QuPath GeoJSON export (each: its outer ring, then its holes),
    read once for both the grid and the outlines drawn on the pages."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AnnotationError(
            f"{path}: not a GeoJSON file ({exc}); export it from QuPath as GeoJSON"
        ) from None
    features = data.get("features") if isinstance(data, dict) else data
    if not isinstance(features, list):
        raise AnnotationError(f"{path}: no `features` list; export a FeatureCollection from QuPath")
    found: list[Rings] = []
    for number, feature in enumerate(features):
        if not isinstance(feature, dict) or feature_class(feature) not in targets:
            continue
        where = f"{path}: feature {number}"
        geometry = feature.get("geometry")
        if geometry is None:  # GeoJSON allows a feature without a geometry: nothing to draw
            continue
        if not isinstance(geometry, dict):
            raise AnnotationError(f"{where}: the geometry is {_kind(geometry)}, not an object; {_FIX}")
        kind, coords = geometry.get("type"), geometry.get("coordinates")
        if kind not in ("Polygon", "MultiPolygon"):
            continue  # points and lines mark no area
        polygons = [coords] if kind == "Polygon" else coords
        if not isinstance(polygons, list) or not all(isinstance(rings, list) for rings in polygons):
            raise AnnotationError(f"{where}: the {kind} coordinates are not lists of rings; {_FIX}")
        found += [_polygon(where, rings) for rings in polygons if rings]
    return found


_FIX = "export the annotations from QuPath as GeoJSON again"


def _kind(value: object) -> str:
    return f"a {type(value).__name__} ({str(value)[:40]!r})"


def _polygon(where: str, rings: list[object]) -> list[list[tuple[float, float]]]:
    """A polygon's rings as level-0 points; AnnotationError for a point that is not two finite numbers
    or a ring that encloses no area (fewer than three distinct points, or all on one line)."""
    polygon = []
    for ring in rings:
        if not isinstance(ring, list):
            raise AnnotationError(f"{where}: a ring is {_kind(ring)}, not a list of points; {_FIX}")
        points = []
        for point in ring:
            if not (
                isinstance(point, list)
                and len(point) >= 2
                and all(isinstance(v, int | float) and not isinstance(v, bool) for v in point[:2])
            ):
                raise AnnotationError(
                    f"{where}: the point {str(point)[:40]} is not two numbers [x, y]; {_FIX}"
                )
            x, y = float(point[0]), float(point[1])
            if not (math.isfinite(x) and math.isfinite(y)):
                raise AnnotationError(f"{where}: the point [{x}, {y}] is not finite; {_FIX}")
            points.append((x, y))
        if _area(points) == 0.0:
            raise AnnotationError(f"{where}: a ring encloses no area (its points lie on one line); {_FIX}")
        polygon.append(points)
    return polygon


def _area(points: list[tuple[float, float]]) -> float:
    """The ring's area (shoelace); 0 for a flat one; inf past float range (check_inside refuses those)."""
    twice = sum(x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in zip(points, points[1:] + points[:1], strict=True))
    return abs(twice) / 2 if math.isfinite(twice) else math.inf


def check_inside(path: Path, polygons: list[Rings], width: int, height: int) -> None:
    """AnnotationError when a point lies outside the `width` x `height` slide: the file was drawn on
    another slide (or in other units), and its targets would be misplaced."""
    for rings in polygons:
        for ring in rings:
            for x, y in ring:
                if not (0 <= x <= width and 0 <= y <= height):
                    raise AnnotationError(
                        f"{path}: the point [{x:g}, {y:g}] lies outside the {width}x{height} slide; "
                        "export the annotations of this slide, in level-0 pixels"
                    )


def polygons_grid(polygons: list[Rings], width: int, height: int, side: int = ANNOTATION_SIDE) -> CropTissue:
    """`polygons` (level-0 px; later rings are holes) drawn on a grid over the `width` x `height` slide."""
    factor = side / max(width, height)
    cols, rows = max(1, round(width * factor)), max(1, round(height * factor))
    canvas = Image.new("1", (cols, rows), 0)
    draw = ImageDraw.Draw(canvas)
    sx, sy = cols / width, rows / height
    for rings in polygons:
        for n, ring in enumerate(rings):
            points = [(x * sx, y * sy) for x, y in ring]
            if len(points) >= 3:
                draw.polygon(points, fill=0 if n else 1, outline=0 if n else 1)
    return CropTissue.from_array(np.asarray(canvas, dtype=bool), width, height)


def geojson_grid(
    path: Path, width: int, height: int, targets: Collection[str], side: int = ANNOTATION_SIDE
) -> CropTissue:
    """The target classes' polygons of a QuPath GeoJSON export on a grid over the `width` x `height` slide."""
    polygons = geojson_polygons(path, targets)
    check_inside(path, polygons, width, height)
    return polygons_grid(polygons, width, height, side)


def feature_class(feature: Mapping[str, object]) -> str | None:
    """A feature's class name: QuPath's `classification.name`, else a plain `classification` or `name`."""
    props = feature.get("properties")
    if not isinstance(props, dict):
        return None
    found = props.get("classification")
    if isinstance(found, dict):
        found = found.get("name")
    found = found if found is not None else props.get("name")
    return str(found) if found is not None else None


def outlines(path: Path, targets: Collection[str]) -> Rings:
    """The outer rings of the target polygons of a GeoJSON file (level-0 px), for drawing."""
    return [polygon[0] for polygon in geojson_polygons(path, targets)]


def grid_outlines(grid: CropTissue) -> Rings:
    """Each connected area of a grid as its bounding box (a closed ring in level-0 px)."""
    rows, cols = grid.shape
    sx, sy = grid.width / cols, grid.height / rows
    labels, _ = ndimage.label(grid.cells())
    rings = []
    for found in ndimage.find_objects(labels):
        if found is None:
            continue
        ys, xs = found
        x0, x1, y0, y1 = xs.start * sx, xs.stop * sx, ys.start * sy, ys.stop * sy
        rings.append([(x0, y0), (x1, y0), (x1, y1), (x0, y1), (x0, y0)])
    return rings


def mask_grid(
    path: Path, width: int, height: int, target_values: Collection[int], downsample: float | None = None
) -> CropTissue:
    """The pixels of a label mask whose value is one of `target_values`, on a grid over the slide.
    `downsample`: slide level-0 pixels per pixel of the mask's own level 0 (None: fitted to the slide)."""
    values, level_downsample = _mask_values(path)
    rows, cols = values.shape
    if abs(math.log((cols / rows) / (width / height))) > MASK_ASPECT_TOLERANCE:
        raise AnnotationError(
            f"{path}: a {cols}x{rows} mask does not have the {width}x{height} slide's aspect; "
            "give the label mask of this slide, uncropped"
        )
    per_cell = level_downsample * (
        downsample if downsample is not None else width / (cols * level_downsample)
    )
    cells = np.isin(values, np.fromiter(target_values, dtype=np.int64))
    return CropTissue.from_array(cells, round(cols * per_cell), round(rows * per_cell))


def _mask_values(path: Path) -> tuple[np.ndarray, float]:
    """The mask's class values (first channel) and the downsample of the level they were read at: a
    low pyramid level, or the whole of a small flat file. A TIFF is read by tifffile, which decodes
    just that level's page (about 10x faster than OpenSlide's RGBA read of it); other files, and a
    TIFF tifffile cannot take apart, by OpenSlide, then PIL."""
    if path.suffix.lower() in TIFF_SUFFIXES:
        found = _tiff_values(path)
        if found is not None:
            return found
    try:
        handle = openslide.OpenSlide(str(path))
    except (openslide.OpenSlideError, OSError):
        handle = None
    if handle is not None:
        with handle:
            level = _coarsest_level(handle.level_dimensions)
            w, h = handle.level_dimensions[level]
            if w * h > MAX_FLAT_PIXELS:
                raise AnnotationError(_too_large(path, w, h, pyramid=True))
            rgba = np.asarray(handle.read_region((0, 0), level, (w, h)))
            return rgba[..., 0], handle.level_dimensions[0][0] / w
    try:
        with Image.open(path) as image:
            if image.width * image.height > MAX_FLAT_PIXELS:
                raise AnnotationError(_too_large(path, image.width, image.height, pyramid=False))
            array = np.asarray(image)
    except (OSError, Image.DecompressionBombError) as exc:
        raise AnnotationError(
            f"{path}: not a readable label mask ({exc}); give a PNG or TIFF of class values"
        ) from None
    return (array[..., 0] if array.ndim == 3 else array), 1.0


def _tiff_values(path: Path) -> tuple[np.ndarray, float] | None:
    """The first channel of a TIFF's coarsest level of at least MASK_LEVEL_SIDE (its pyramid as
    tifffile groups it: reduced pages or SubIFDs) and that level's downsample; None: not a TIFF
    tifffile can read as one image."""
    try:
        with tifffile.TiffFile(path) as tif:
            levels = tif.series[0].levels
            sizes = tuple((int(lv.keyframe.imagewidth), int(lv.keyframe.imagelength)) for lv in levels)
            n = _coarsest_level(sizes)
            w, h = sizes[n]
            too_large = w * h > MAX_FLAT_PIXELS  # said outside: never read such a level whole
            values, axes = (None, "") if too_large else (levels[n].asarray(), levels[n].axes)
    except (tifffile.TiffFileError, OSError, ValueError, IndexError, KeyError):
        return None
    if values is None:
        raise AnnotationError(_too_large(path, w, h, pyramid=len(sizes) > 1))
    if "S" in axes:  # samples (RGB): the class is the first channel
        values, axes = np.take(values, 0, axis=axes.index("S")), axes.replace("S", "")
    if values.ndim != 2 or axes != "YX":
        return None
    return values, sizes[0][0] / w


def _too_large(path: Path, w: int, h: int, *, pyramid: bool) -> str:
    if pyramid:
        return (
            f"{path}: its coarsest level of at least {MASK_LEVEL_SIDE} px is {w}x{h}, too large to "
            "read whole; write it with more pyramid levels or at a lower resolution"
        )
    return (
        f"{path}: a {w}x{h} flat label mask is too large to read whole; "
        "write it as a pyramidal TIFF or at a lower resolution (with annotations.mask_downsample)"
    )


def _coarsest_level(dimensions: tuple[tuple[int, int], ...]) -> int:
    """The coarsest level whose long side is still MASK_LEVEL_SIDE or more (level 0 if none is)."""
    fit = [n for n, (w, h) in enumerate(dimensions) if max(w, h) >= MASK_LEVEL_SIDE]
    return max(fit) if fit else 0
