"""Where an item's slide lives under the user's WSI root, and which layout it was found in.

Users get slides in different ways (the authors' downloader, the GDC Data Transfer Tool, a GTEx
DICOM export, files renamed by hand), so the resolver tries every known layout in one fixed order
(SEARCH_ORDER below) and reports the layout that matched: a run's provenance and the dry run can
then say where each slide came from. The search stays cheap on a root holding ~1000 slides: exact
names are single stat calls; only the GDC UUID suffix (unknowable from the CSV) needs a listing of
a slide folder, read once per folder and reused until the folder changes; the `<file_id>/` and
DICOM series folders are the only other folders listed, and they hold one slide each.

The CSV's image_path, benchmark_name and file_id are untrusted input: a path that would leave the
root is rejected rather than read, so a crafted CSV cannot make the agent open (and send to a
provider) arbitrary files. Symlinks inside the root are followed (slides often live on another
disk); only the written path is checked.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, Field

from giant.core import Item
from giant.data.file_kind import bad_path, not_a_file, shown
from giant.wsi.errors import SlideMissing, SlidePathInvalid

TCGA_GROUP = "tcga"
TCGA_BENCHMARKS = frozenset({"tcga", "tcga_slidebench", "tcga_expert_vqa"})  # share one slide folder
# Extensions OpenSlide reads; "other_extension" tries them in this order.
SLIDE_EXTENSIONS = (
    ".svs", ".tif", ".tiff", ".ndpi", ".vms", ".vmu", ".scn", ".mrxs", ".svslide", ".bif", ".dcm", ".czi"
)  # fmt: skip
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_EXT = "|".join(re.escape(ext) for ext in SLIDE_EXTENSIONS)
UUID_RE = re.compile(rf"^{_UUID}$", re.IGNORECASE)
# <stem>.<uuid>.<ext>: the GDC's file names (the UUID is the slide's, not the file_id).
UUID_SUFFIX_RE = re.compile(rf"^(?P<stem>.+)\.{_UUID}(?P<ext>{_EXT})$", re.IGNORECASE)

Layout = Literal[
    "flat", "group", "benchmark", "gdc_transfer", "gdc_uuid_suffix", "other_extension", "dicom_folder"
]  # fmt: skip


class SlideLocation(BaseModel):
    path: Path  # the file to open (for a DICOM series: one .dcm file of it; OpenSlide finds the rest)
    layout: Layout
    duplicates: list[Path] = Field(default_factory=list)  # further matches, in search order, not used


Located = SlideLocation | SlidePathInvalid | SlideMissing


@dataclass(frozen=True)
class _Where:
    """What the CSV says about one slide, already checked to stay inside the root."""

    root: Path
    relative: PurePosixPath  # image_path, normalised
    group: Path  # root/<tcga|gtex|panda>, or root/<benchmark_name> for other tasks
    benchmark: Path | None  # root/<benchmark_name>, when it differs from the group folder
    file_id: str  # a GDC UUID, or "" when the row's file_id is not one

    @property
    def folders(self) -> list[Path]:
        """The folders every name variant is looked for in: root, group, benchmark."""
        return [f for f in (self.root, self.group, self.benchmark) if f is not None]

    def in_each_folder(self, name: str) -> list[Path]:
        return [folder / self.relative.parent / name for folder in self.folders]


def slide_group(benchmark: str) -> str:
    return TCGA_GROUP if benchmark in TCGA_BENCHMARKS else benchmark


def resolve_slide(wsi_root: Path, item: Item) -> Path:
    """The slide file to open for the item (see `locate_slide`)."""
    return locate_slide(wsi_root, item).path


def locate_slide(wsi_root: Path, item: Item) -> SlideLocation:
    """The first match in SEARCH_ORDER; later matches of other files are listed as duplicates.

    Raises SlidePathInvalid for a CSV value that would leave the root, SlideMissing (with the exact
    paths tried) when no layout holds the slide.
    """
    where = _where(Path(wsi_root), item)
    found: list[tuple[Layout, Path]] = []
    seen: set[tuple[int, int]] = set()
    for layout, finder in SEARCH_ORDER:
        for path in finder(where):
            identity = _identity(path)
            if identity is None or identity in seen:  # one file reached twice (symlinks) is no duplicate
                continue
            seen.add(identity)
            found.append((layout, path))
    if not found:
        tried = where.in_each_folder(where.relative.name)
        exact = ", ".join(str(path) for path in tried)
        # a directory or FIFO where the slide should be is named, not reported as missing
        there = [
            f"{path} is {kind}" for path in tried if (kind := not_a_file(path)) not in (None, "no such file")
        ]
        raise SlideMissing(
            f"slide for {item.key} not found: {'; '.join(there) + '; ' if there else ''}tried {exact}, "
            "the GDC download folders, other slide extensions and a DICOM folder (see docs/slides.md)",
            slide=item.key,
            tried=tried,
        )
    (layout, path), rest = found[0], found[1:]
    return SlideLocation(path=path, layout=layout, duplicates=[p for _, p in rest])


def locate_all(wsi_root: Path, items: Iterable[Item]) -> dict[str, Located]:
    """Every item's location or the reason it has none, keyed by item key (a run goes on without
    the slides it cannot find)."""
    located: dict[str, Located] = {}
    for item in items:
        try:
            located[item.key] = locate_slide(wsi_root, item)
        except (SlidePathInvalid, SlideMissing) as exc:
            located[item.key] = exc
    return located


def layout_counts(layouts: Iterable[str]) -> dict[str, int]:
    """How many slides each layout supplied, in search order (for the dry run and provenance)."""
    counts = Counter(layouts)
    return {layout: counts[layout] for layout in LAYOUTS if counts[layout]}


def _exact(folder_of: Callable[[_Where], Path | None]) -> Callable[[_Where], Iterator[Path]]:
    def find(where: _Where) -> Iterator[Path]:
        folder = folder_of(where)
        if folder is not None and (folder / where.relative).is_file():
            yield folder / where.relative

    return find


def _gdc_transfer(where: _Where) -> Iterator[Path]:
    """The GDC Data Transfer Tool writes <dest>/<file_id>/<file_name>, file_name being
    <stem>.<uuid>.svs for TCGA slides: the folder holds one file, so it is listed."""
    if not where.file_id:
        return
    for folder in where.folders:
        files = _listing(folder / where.file_id)
        yield from (folder / where.file_id / name for name in files if _same_slide(name, where.relative))


def _uuid_suffix(where: _Where) -> Iterator[Path]:
    for folder in where.folders:
        directory = folder / where.relative.parent
        names = _uuid_index(str(directory), _mtime(directory)).get(where.relative.stem.lower(), ())
        yield from (directory / name for name in names if (directory / name).is_file())


def _other_extension(where: _Where) -> Iterator[Path]:
    own = where.relative.suffix.lower()
    for ext in SLIDE_EXTENSIONS:
        if ext != own:
            yield from (p for p in where.in_each_folder(where.relative.stem + ext) if p.is_file())


def _dicom_folder(where: _Where) -> Iterator[Path]:
    """A GTEx DICOM series saved as a folder named after the slide. OpenSlide opens a DICOM WSI
    from any one file of its series (it finds the others in the same folder), so the first .dcm
    file by name is the path to open."""
    stem = where.relative.stem
    for folder in (*where.in_each_folder(stem), *where.in_each_folder(stem + ".dcm")):
        dicoms = [name for name in _listing(folder) if name.lower().endswith(".dcm")]
        if dicoms:
            yield folder / dicoms[0]


# The one search order; a slide found by several entries is used from the first one. Every name
# variant (the last four) is looked for in <root>, <root>/<group> and <root>/<benchmark_name>:
#   flat             <root>/<image_path>  (where scripts/fetch_slides.py writes)
#   group            <root>/{tcga,gtex,panda}/<image_path>
#   benchmark        <root>/<benchmark_name>/<image_path>  (the authors' downloader)
#   gdc_transfer     <folder>/<file_id>/<stem>[.<uuid>].<ext>  (GDC Data Transfer Tool)
#   gdc_uuid_suffix  <folder>/<stem>.<uuid>.<ext>
#   other_extension  <folder>/<stem>.<ext>, ext in SLIDE_EXTENSIONS
#   dicom_folder     <folder>/<stem>[.dcm]/*.dcm  (a DICOM series, e.g. GTEx)
SEARCH_ORDER: tuple[tuple[Layout, Callable[[_Where], Iterator[Path]]], ...] = (
    ("flat", _exact(lambda where: where.root)),
    ("group", _exact(lambda where: where.group)),
    ("benchmark", _exact(lambda where: where.benchmark)),
    ("gdc_transfer", _gdc_transfer),
    ("gdc_uuid_suffix", _uuid_suffix),
    ("other_extension", _other_extension),
    ("dicom_folder", _dicom_folder),
)
LAYOUTS: tuple[str, ...] = tuple(layout for layout, _ in SEARCH_ORDER)


def _same_slide(name: str, relative: PurePosixPath) -> bool:
    """name is the CSV's file name, or the same stem with a GDC UUID and/or another slide extension."""
    if name == relative.name:
        return True
    stem, ext = os.path.splitext(name)
    match = UUID_SUFFIX_RE.match(name)
    if match:
        stem = match["stem"]
    return stem.lower() == relative.stem.lower() and ext.lower() in SLIDE_EXTENSIONS


def _listing(folder: Path) -> list[str]:
    """Sorted file names in a folder that holds one slide (a `<file_id>/` or DICOM series folder)."""
    try:
        with os.scandir(folder) as entries:
            return sorted(e.name for e in entries if e.is_file())
    except OSError:  # absent, not a folder, or unreadable: nothing found there
        return []


def _mtime(directory: Path) -> int:
    try:
        return directory.stat().st_mtime_ns
    except OSError:
        return -1


@lru_cache(maxsize=64)
def _uuid_index(directory: str, mtime_ns: int) -> dict[str, tuple[str, ...]]:
    """stem (lower case) -> names <stem>.<uuid>.<ext> in one slide folder. Keyed by the folder's
    mtime, so a slide added or renamed later is seen; one listing serves every item of a run."""
    if mtime_ns < 0:
        return {}
    index: dict[str, list[str]] = {}
    try:
        with os.scandir(directory) as entries:
            names = sorted(e.name for e in entries)
    except OSError:
        return {}
    for name in names:
        match = UUID_SUFFIX_RE.match(name)
        if match:
            index.setdefault(match["stem"].lower(), []).append(name)
    return {stem: tuple(names) for stem, names in index.items()}


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def _where(root: Path, item: Item) -> _Where:
    relative = _safe_relative(item)
    group = _folder_name(item, slide_group(item.benchmark), "benchmark_name")
    benchmark = _folder_name(item, item.benchmark, "benchmark_name")
    file_id = item.file_id.strip()
    if file_id:
        _folder_name(item, file_id, "file_id")  # never used as a path unless a plain UUID, still refused
    return _Where(
        root=root,
        relative=relative,
        group=root / group,
        benchmark=root / benchmark if benchmark != group else None,
        file_id=file_id if UUID_RE.match(file_id) else "",
    )


def _folder_name(item: Item, name: str, column: str) -> str:
    """A CSV value used as one folder name below the root must be exactly one plain component."""
    if not name.strip() or name in (".", "..") or any(sep in name for sep in ("/", "\\", "\0")):
        raise SlidePathInvalid(
            f"{item.key}: {column} {name!r} cannot name a folder under the WSI root; fix the CSV",
            slide=item.key,
        )
    return name


def _safe_relative(item: Item) -> PurePosixPath:
    raw = item.image_path.replace("\\", "/")
    if not raw.strip():
        raise SlidePathInvalid(f"{item.key}: image_path is empty", slide=item.key)
    if (bad := bad_path(raw)) is not None:
        raise SlidePathInvalid(f"{item.key}: image_path {shown(raw)} {bad}", slide=item.key)
    path = PurePosixPath(raw)
    normal = PurePosixPath(os.path.normpath(raw))
    if path.is_absolute() or raw.startswith("~") or (normal.parts and normal.parts[0] == ".."):
        raise SlidePathInvalid(
            f"{item.key}: image_path {item.image_path!r} leaves the WSI root; use a relative path",
            slide=item.key,
        )
    return normal
