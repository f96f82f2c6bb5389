"""Are a run's slides in place and readable? One row per distinct slide, before any money is spent.

A slide counts as present only when OpenSlide opens it and its level count and size can be read
(giant.wsi.slide.Slide also decodes a tile, so a truncated download is caught here, not mid-run).
Shared by `scripts/fetch_slides.py check=true` and the dry run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, computed_field

from giant.core import Item
from giant.data.slides import LAYOUTS, Layout, SlideLocation, locate_all
from giant.wsi import SlideError
from giant.wsi.slide import Slide

OPEN_WORKERS = 8  # opening a slide is I/O bound: overlap them
SHOWN_PROBLEMS = 10
Status = Literal["present", "missing", "unreadable"]


class SlideRow(BaseModel):
    tasks: list[str]  # benchmarks whose questions use the slide
    keys: list[str]  # those questions
    image_path: str
    status: Status
    layout: Layout | None = None
    path: Path | None = None
    duplicates: list[Path] = Field(default_factory=list)
    bytes: int | None = None  # on disk (a DICOM series: all its .dcm files)
    level_count: int | None = None
    width: int | None = None
    height: int | None = None
    mpp: float | None = None  # level-0 microns per pixel (openslide.mpp-x); None: the slide does not say
    reason: str = ""


class CheckReport(BaseModel):
    wsi_root: Path
    opened: bool  # False: presence only, the slides were not opened
    slides: list[SlideRow]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        """Every slide the items need is present (and, when opened, readable)."""
        return all(row.status == "present" for row in self.slides)

    def by_key(self) -> dict[str, SlideRow]:
        return {key: row for row in self.slides for key in row.keys}

    def render(self, saved: Path | None = None) -> str:
        """Per task: slides, present, missing, unreadable, layouts, bytes; then the problems (a long
        list cut short, pointing at `saved`, the JSON file that keeps every row)."""
        rest = f"all of them in {saved}" if saved else "not shown"
        checked = "opened with OpenSlide" if self.opened else "presence only, not opened"
        lines = [f"slides under {self.wsi_root} ({checked})"]
        header = ("task", "slides", "present", "missing", "unreadable", "bytes", "layouts")
        table = [header, *(_task_line(task, rows) for task, rows in self._per_task().items())]
        table.append(_task_line("all (distinct)", self.slides))
        widths = [max(len(line[i]) for line in table) for i in range(len(header))]
        for line in table:
            cells = [
                line[0].ljust(widths[0]),
                *(c.rjust(w) for c, w in zip(line[1:-1], widths[1:-1], strict=True)),
            ]
            lines.append("  " + "  ".join([*cells, line[-1]]).rstrip())
        problems = [
            f"  {row.status} {row.image_path} ({', '.join(row.keys)}): {row.reason}"
            for row in self.slides
            if row.status != "present"
        ]
        lines += first_lines(problems, rest)
        duplicates = [
            f"  duplicate {row.image_path}: using {row.path} ({row.layout}), also at "
            + ", ".join(map(str, row.duplicates))
            for row in self.slides
            if row.duplicates
        ]
        lines += first_lines(duplicates, rest)
        lines.append("all slides present and readable" if self.ok else "NOT ready: see the lines above")
        return "\n".join(lines)

    def _per_task(self) -> dict[str, list[SlideRow]]:
        tasks: dict[str, list[SlideRow]] = defaultdict(list)
        for row in self.slides:
            for task in row.tasks:
                tasks[task].append(row)
        return dict(sorted(tasks.items()))


def check_slides(items: Sequence[Item], wsi_root: Path, *, open_slides: bool = True) -> CheckReport:
    """Locate every item's slide (slides shared by several questions or tasks are checked once)
    and, with open_slides, open each with OpenSlide."""
    located = locate_all(wsi_root, items)
    groups: dict[str, list[Item]] = defaultdict(list)
    for item in items:
        loc = located[item.key]
        groups[str(loc.path) if isinstance(loc, SlideLocation) else f"\0{item.image_path}"].append(item)
    found = [loc for key in groups if isinstance(loc := located[groups[key][0].key], SlideLocation)]
    with ThreadPoolExecutor(OPEN_WORKERS) as pool:
        probes = dict(
            zip(
                [loc.path for loc in found],
                pool.map(_probe if open_slides else _size_only, found),
                strict=True,
            )
        )
    rows = []
    for members in groups.values():
        loc = located[members[0].key]
        common = {
            "tasks": list(dict.fromkeys(item.benchmark for item in members)),
            "keys": [item.key for item in members],
            "image_path": members[0].image_path,
        }
        if not isinstance(loc, SlideLocation):
            rows.append(SlideRow(status="missing", reason=str(loc), **common))
            continue
        rows.append(
            SlideRow(
                layout=loc.layout, path=loc.path, duplicates=loc.duplicates, **common, **probes[loc.path]
            )
        )
    return CheckReport(wsi_root=wsi_root, opened=open_slides, slides=rows)


def first_lines(lines: list[str], rest_hint: str) -> list[str]:
    """A long list of problems is summarised on screen; the JSON report keeps all of it."""
    if len(lines) <= SHOWN_PROBLEMS:
        return lines
    return [*lines[:SHOWN_PROBLEMS], f"  ... and {len(lines) - SHOWN_PROBLEMS} more ({rest_hint})"]


def _size_only(loc: SlideLocation) -> dict[str, object]:
    return {"status": "present", "bytes": _bytes(loc)}


def _probe(loc: SlideLocation) -> dict[str, object]:
    try:
        with Slide.open(loc.path) as slide:
            return {
                **_size_only(loc),
                "level_count": slide.level_count,
                "width": slide.width,
                "height": slide.height,
                "mpp": slide.mpp_x,
            }
    except SlideError as exc:
        return {"status": "unreadable", "bytes": _bytes(loc), "reason": str(exc)}


def _bytes(loc: SlideLocation) -> int:
    """A DICOM series is the whole folder of .dcm files OpenSlide reads, not the one file named."""
    if loc.layout == "dicom_folder":
        return sum(p.stat().st_size for p in loc.path.parent.iterdir() if p.suffix.lower() == ".dcm")
    return loc.path.stat().st_size


def _task_line(task: str, rows: list[SlideRow]) -> tuple[str, ...]:
    counts = {
        status: sum(row.status == status for row in rows) for status in ("present", "missing", "unreadable")
    }
    per_layout = ", ".join(
        f"{layout} {n}" for layout in LAYOUTS if (n := sum(row.layout == layout for row in rows))
    )
    size = sum(row.bytes or 0 for row in rows)
    return (task, str(len(rows)), *(str(n) for n in counts.values()), human_bytes(size), per_layout or "-")


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"
