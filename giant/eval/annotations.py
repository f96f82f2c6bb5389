"""`dataset.annotations`: where each slide's annotations are and which classes are the evidence.

For a slide `<stem>.<ext>` the folder is searched for `<stem>.geojson` (QuPath's GeoJSON export) and
then for a label mask `<stem>_mask.tiff|.tif|.png` (PANDA's `train_label_masks/<image_id>_mask.tiff`).
A mask's pixel values are named by a class map: `class_map` names one of `class_maps`, or, with
`slide_providers` (PANDA's train.csv: image_id, data_provider), each slide takes the map of its data
provider (Radboud and Karolinska number their classes differently). A slide with neither file is
"not annotated": its item-runs are never counted as misses. A slide's file is read once per process
for its grid and its outlines; the last ANNOTATIONS_KEPT grids (each one bit per cell, about 0.5 MB at
giant.wsi.annotations.ANNOTATION_SIDE) and OUTLINES_KEPT outlines are kept.
"""

from __future__ import annotations

import csv
import functools
import logging
import threading
from collections import OrderedDict
from pathlib import Path

from giant.errors import ConfigError
from giant.eval.annotation_settings import AnnotationSettings
from giant.wsi.annotations import (
    AnnotationError,
    Rings,
    check_inside,
    geojson_polygons,
    grid_outlines,
    mask_grid,
    polygons_grid,
)
from giant.wsi.tissue import CropTissue

log = logging.getLogger(__name__)

GEOJSON_SUFFIXES = (".geojson",)
MASK_SUFFIXES = ("_mask.tiff", "_mask.tif", "_mask.png")
ANNOTATIONS_KEPT = 64
# Outlines are a few rings per slide (a label mask's areas as boxes, a GeoJSON file's polygons): kept for
# this many slides, so the trajectory pages and the slides' overviews at a job's end draw every slide
# the episodes read without reading its file again.
OUTLINES_KEPT = 256
SHARED_KEPT = 4  # `dataset.annotations` settings with a shared instance (one per job in practice)
FileKey = tuple[str, int, int]  # the annotation file, its mtime and size: a rewritten file is read again


class Annotations:
    """Each slide's target grid and outlines, read from its file once per process (`of` hands every
    caller of the same settings one instance: the runner's evidence, the pages' outlines and the
    slides' overviews share it). Thread-safe; blocking: call it off the event loop."""

    def __init__(self, settings: AnnotationSettings) -> None:
        self.settings = settings
        self.folder = settings.path
        self._grids: OrderedDict[FileKey, CropTissue | None] = OrderedDict()
        self._outlines: OrderedDict[FileKey, Rings] = OrderedDict()
        self._building: dict[FileKey, threading.Lock] = {}
        self._lock = threading.Lock()

    @classmethod
    def of(cls, settings: AnnotationSettings | None) -> Annotations | None:
        """The shared instance for `settings`; None when no folder is set; a folder that is not there
        is a setup error, said at once."""
        if settings is None or settings.path is None:
            return None
        if not settings.path.is_dir():
            raise ConfigError(
                f"dataset.annotations.path={settings.path}: folder not found; point it at the per-slide "
                "GeoJSON files or label masks (or null)"
            )
        key = settings.model_dump_json()
        with _shared_lock:
            found = _shared.get(key)
            if found is None:
                found = _shared[key] = cls(settings)
                while len(_shared) > SHARED_KEPT:
                    _shared.popitem(last=False)
            _shared.move_to_end(key)
            return found

    def files(self, slide: Path) -> Path | None:
        """The slide's annotation file: its GeoJSON, else its label mask; None: not annotated."""
        assert self.folder is not None
        stem = slide.name.split(".")[0]
        for suffix in GEOJSON_SUFFIXES + MASK_SUFFIXES:
            candidate = self.folder / f"{stem}{suffix}"
            if candidate.is_file():
                return candidate
        return None

    def target(self, slide: Path, width: int, height: int) -> CropTissue | None:
        """The grid of the slide's target classes; None: the slide has no (readable) annotations."""
        found = self.files(slide)
        if found is None:
            return None
        return self._read(found, slide, width, height)[0]

    def outlines(self, slide: Path, width: int, height: int) -> Rings:
        """The target regions' outlines in level-0 px, for drawing: a GeoJSON file's polygons, a label
        mask's connected target areas as their bounding boxes. Empty: not annotated."""
        found = self.files(slide)
        if found is None:
            return []
        key = _key(found)
        with self._lock:
            if key in self._outlines:  # kept longer than the grids: the pages need no grid
                self._outlines.move_to_end(key)
                return self._outlines[key]
        return self._read(found, slide, width, height)[1]

    def _read(self, found: Path, slide: Path, width: int, height: int) -> tuple[CropTissue | None, Rings]:
        """The file's grid and outlines: from the caches, else read once however many threads ask."""
        key = _key(found)
        with self._lock:
            if (cached := self._cached(key)) is not None:
                return cached
            building = self._building.setdefault(key, threading.Lock())
        try:
            with building:
                with self._lock:
                    if (cached := self._cached(key)) is not None:
                        return cached
                try:
                    grid, rings = self._build(found, slide, width, height)
                except AnnotationError as exc:
                    log.warning("annotations of %s not used: %s", slide.name, exc)
                    grid, rings = None, []
                with self._lock:
                    self._grids[key], self._outlines[key] = grid, rings
                    for kept, limit in ((self._grids, ANNOTATIONS_KEPT), (self._outlines, OUTLINES_KEPT)):
                        while len(kept) > limit:
                            kept.popitem(last=False)
                return grid, rings
        finally:
            with self._lock:
                self._building.pop(key, None)

    def _cached(self, key: FileKey) -> tuple[CropTissue | None, Rings] | None:
        """The grid and outlines already read (call under the lock)."""
        if key not in self._grids or key not in self._outlines:
            return None
        self._grids.move_to_end(key)
        self._outlines.move_to_end(key)
        return self._grids[key], self._outlines[key]

    def _build(self, found: Path, slide: Path, width: int, height: int) -> tuple[CropTissue, Rings]:
        targets = set(self.settings.targets)
        if found.name.endswith(GEOJSON_SUFFIXES):
            polygons = geojson_polygons(found, targets)
            check_inside(found, polygons, width, height)
            return polygons_grid(polygons, width, height), [polygon[0] for polygon in polygons]
        classes = self.class_map(slide)
        values = [value for value, name in classes.items() if name in targets]
        grid = mask_grid(found, width, height, values, self.settings.mask_downsample)
        return grid, grid_outlines(grid)

    def class_map(self, slide: Path) -> dict[int, str]:
        """The slide's class map: its data provider's (slide_providers), else `class_map`'s."""
        s = self.settings
        provider = _providers(s.slide_providers).get(slide.name.split(".")[0]) if s.slide_providers else None
        chosen = s.class_maps.get(provider.lower(), {}) if provider else {}
        return {int(value): name for value, name in (chosen or s.class_maps[s.class_map]).items()}


def _key(found: Path) -> FileKey:
    stat = found.stat()
    return str(found), stat.st_mtime_ns, stat.st_size


_shared: OrderedDict[str, Annotations] = OrderedDict()
_shared_lock = threading.Lock()


@functools.cache
def _providers(path: Path) -> dict[str, str]:
    """image_id -> data_provider of a PANDA-style train.csv."""
    try:
        with path.open(newline="", encoding="utf-8") as f:
            return {row["image_id"]: row["data_provider"] for row in csv.DictReader(f)}
    except (OSError, KeyError) as exc:
        raise ConfigError(
            f"dataset.annotations.slide_providers={path}: not a CSV with image_id and data_provider ({exc}); "
            "give PANDA's train.csv or null"
        ) from None
