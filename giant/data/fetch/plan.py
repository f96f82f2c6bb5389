"""What to fetch, decided before any slide byte moves: one target per distinct slide (tasks share
slides), which are already present under the WSI root (in any layout the resolver reads), and how
many bytes the rest will take (the GDC's exact sizes; typical sizes, marked as estimates, where a
source reports none)."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol, TypeVar

import httpx2
from pydantic import BaseModel

from giant.core import Item
from giant.data.check import human_bytes
from giant.data.fetch.settings import FetchSettings
from giant.data.fetch.sources import SOURCES, FetchError, Remote, Source, gdc_remote, gtex_remote
from giant.data.slides import locate_slide
from giant.wsi import SlideMissing, SlidePathInvalid


class Target(BaseModel):
    """One distinct slide and every task that uses it."""

    image_path: str
    file_id: str
    source: Source | None  # None: no known source for the task (e.g. the generated demo set)
    tasks: list[str]
    present: str | None = None  # the layout it was found in
    remote: Remote | None = None
    error: str | None = None  # why it cannot be fetched (known before any transfer)

    @property
    def size(self) -> int | None:
        return self.remote.size if self.remote else None


class Plan(BaseModel):
    wsi_root: Path
    targets: list[Target]
    estimates: dict[str, int]

    @property
    def to_fetch(self) -> list[Target]:
        return [t for t in self.targets if t.present is None and t.error is None]

    def expected_bytes(self, target: Target) -> tuple[int, bool]:
        """(bytes, is_estimate) for one target that will be fetched."""
        if target.size is not None:
            return target.size, False
        return self.estimates.get(target.source or "", 0), True

    def render(self) -> str:
        """Per task: slides, already present, to fetch, bytes to fetch (`~` marks estimates)."""
        lines = [
            "| task | slides | present | to fetch | bytes to fetch | not fetchable |",
            "|---|---|---|---|---|---|",
        ]
        estimated = False
        for task, targets in per_task(self.targets):
            fetch = [t for t in targets if t.present is None and t.error is None]
            sizes = [self.expected_bytes(t) for t in fetch]
            guess = any(is_estimate for _, is_estimate in sizes)
            estimated |= guess
            shown = ("~" if guess else "") + human_bytes(sum(n for n, _ in sizes))
            present = sum(t.present is not None for t in targets)
            errors = sum(t.error is not None for t in targets)
            lines.append(f"| {task} | {len(targets)} | {present} | {len(fetch)} | {shown} | {errors} |")
        if estimated:
            typical = ", ".join(f"{src} {human_bytes(n)}" for src, n in self.estimates.items())
            lines.append(
                f"~ estimate: these sources report no size before the download (typical slide: {typical})"
            )
        lines += [f"not fetchable: {t.image_path}: {t.error}" for t in self.targets if t.error]
        return "\n".join(lines)


class _HasTasks(Protocol):
    tasks: list[str]


Row = TypeVar("Row", bound=_HasTasks)


def per_task(rows: Sequence[Row]) -> list[tuple[str, list[Row]]]:
    """The rows of each task in first-seen order, then all of them when there are several tasks (a
    slide shared by tasks counts once per task, and once in the total)."""
    tasks = list(dict.fromkeys(task for row in rows for task in row.tasks))
    groups = [(task, [row for row in rows if task in row.tasks]) for task in tasks]
    return [*groups, ("all (distinct slides)", list(rows))] if len(tasks) > 1 else groups


def build_plan(items: Sequence[Item], wsi_root: Path, client: httpx2.Client, settings: FetchSettings) -> Plan:
    targets = _targets(items, wsi_root)
    missing = [t for t in targets if t.present is None and t.error is None]
    with ThreadPoolExecutor(settings.concurrency) as pool:
        list(pool.map(lambda t: _describe(t, client, settings), missing))
    return Plan(wsi_root=wsi_root, targets=targets, estimates=settings.estimate_bytes)


def _targets(items: Sequence[Item], wsi_root: Path) -> list[Target]:
    by_path: dict[str, Target] = {}
    for item in items:
        target = by_path.get(item.image_path)
        if target is not None:
            if item.benchmark not in target.tasks:
                target.tasks.append(item.benchmark)
            continue
        target = Target(
            image_path=item.image_path,
            file_id=item.file_id,
            source=SOURCES.get(item.benchmark),
            tasks=[item.benchmark],
        )
        try:
            target.present = locate_slide(wsi_root, item).layout
        except SlideMissing:  # to be fetched: say why it cannot be, if so
            if target.source is None:
                target.error = f"no download source for task {item.benchmark}"
            elif not item.file_id:
                target.error = "the CSV gives no file_id for it"
        except SlidePathInvalid as exc:
            target.error = str(exc)
        by_path[item.image_path] = target
    return list(by_path.values())


def _describe(target: Target, client: httpx2.Client, settings: FetchSettings) -> None:
    try:
        if target.source == "gdc":
            target.remote = gdc_remote(client, settings, target.file_id)
        elif target.source == "gtex":
            target.remote = gtex_remote(settings.gtex_url, target.file_id)
    except FetchError as exc:
        target.error = str(exc)
