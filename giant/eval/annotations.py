"""`dataset.annotations`: where each slide's annotations are and which classes are the evidence.

For a slide `<stem>.<ext>` the folder is searched for `<stem>.geojson` (QuPath's GeoJSON export) and
then for a label mask `<stem>_mask.tiff|.tif|.png` (PANDA's `train_label_masks/<image_id>_mask.tiff`).
A mask's pixel values are named by a class map: `class_map` names one of `class_maps`, or, with
`slide_providers` (PANDA's train.csv: image_id, data_provider), each slide takes the map of its data
provider (Radboud and Karolinska number their classes differently). A slide with neither file is
"not annotated": its item-runs are never counted as misses. Grids are built once per slide file and the
last ANNOTATIONS_KEPT are kept (each one bit per cell, about 0.5 MB at giant.wsi.annotations.ANNOTATION_SIDE).
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
from giant.wsi.annotations import AnnotationError, geojson_grid, grid_outlines, mask_grid, outlines
from giant.wsi.tissue import CropTissue

log = logging.getLogger(__name__)

GEOJSON_SUFFIXES = (".geojson",)
MASK_SUFFIXES = ("_mask.tiff", "_mask.tif", "_mask.png")
ANNOTATIONS_KEPT = 64


class Annotations:
    """Each slide's target grid, found and built on demand (thread-safe; blocking: call off the loop)."""

    def __init__(self, settings: AnnotationSettings) -> None:
        self.settings = settings
        self.folder = settings.path
        self._grids: OrderedDict[tuple[str, int, int], CropTissue | None] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def of(cls, settings: AnnotationSettings | None) -> Annotations | None:
        """None when no folder is set; a folder that is not there is a setup error, said at once."""
        if settings is None or settings.path is None:
            return None
        if not settings.path.is_dir():
            raise ConfigError(
                f"dataset.annotations.path={settings.path}: folder not found; point it at the per-slide "
                "GeoJSON files or label masks (or null)"
            )
        return cls(settings)

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
        stat = found.stat()
        key = (str(found), stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if key in self._grids:
                self._grids.move_to_end(key)
                return self._grids[key]
        try:
            grid: CropTissue | None = self._build(found, slide, width, height)
        except AnnotationError as exc:
            log.warning("annotations of %s not used: %s", slide.name, exc)
            grid = None
        with self._lock:
            self._grids[key] = grid
            while len(self._grids) > ANNOTATIONS_KEPT:
                self._grids.popitem(last=False)
        return grid

    def outlines(self, slide: Path, width: int, height: int) -> list[list[tuple[float, float]]]:
        """The target regions' outlines in level-0 px, for drawing: a GeoJSON file's polygons, a label
        mask's connected target areas as their bounding boxes. Empty: not annotated."""
        found = self.files(slide)
        if found is None:
            return []
        if found.name.endswith(GEOJSON_SUFFIXES):
            try:
                return outlines(found, set(self.settings.targets))
            except (OSError, ValueError):
                return []
        grid = self.target(slide, width, height)
        return [] if grid is None else grid_outlines(grid)

    def _build(self, found: Path, slide: Path, width: int, height: int) -> CropTissue:
        targets = set(self.settings.targets)
        if found.name.endswith(GEOJSON_SUFFIXES):
            return geojson_grid(found, width, height, targets)
        classes = self.class_map(slide)
        values = [value for value, name in classes.items() if name in targets]
        return mask_grid(found, width, height, values, self.settings.mask_downsample)

    def class_map(self, slide: Path) -> dict[int, str]:
        """The slide's class map: its data provider's (slide_providers), else `class_map`'s."""
        s = self.settings
        provider = _providers(s.slide_providers).get(slide.name.split(".")[0]) if s.slide_providers else None
        chosen = s.class_maps.get(provider.lower(), {}) if provider else {}
        return {int(value): name for value, name in (chosen or s.class_maps[s.class_map]).items()}


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
