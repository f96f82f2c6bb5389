"""Task files (giant.data.custom): yours (dataset=custom dataset.path=FILE, CSV or JSONL;
docs/custom_tasks.md), every row checked before anything is paid, every problem on its own line (a
ConfigError: exit 2, no MLflow run, no call); and the synthetic demo set's (giant.data.demo), built once
into paths.cache_dir, its annotations the painted markers (with dataset.csv_path: that MultiPathQA CSV)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from giant.data.custom import load_task_file
from giant.data.digest import DatasetDigests
from giant.data.loaders.base import LOADERS, DatasetFields, Loaded, Loader
from giant.errors import ConfigError
from giant.registry import register


@register("loader")
class TaskFileLoader(Loader):
    name = "custom"
    task_file = True

    def load(self, ds: DatasetFields, *, wsi_root: Path, cache_dir: Path, check_slides: bool) -> Loaded:
        assert ds.path is not None  # RunSettings.cross_check
        return task_file_data(ds.path, ds.benchmark, wsi_root, check_slides=check_slides)


@register("loader")
class Demo(Loader):
    name = "demo"

    def load(self, ds: DatasetFields, *, wsi_root: Path, cache_dir: Path, check_slides: bool) -> Loaded:
        if ds.csv_path is not None:  # RunSettings.cross_check: dataset.wsi_root holds its slides
            return LOADERS["multipathqa"].load(ds, wsi_root=wsi_root, cache_dir=cache_dir, check_slides=False)
        from giant.data.demo import build_demo  # the slide writers: only for a job that loads

        demo = build_demo(cache_dir / "demo")
        data = task_file_data(demo.task_file, ds.benchmark, demo.wsi_root, check_slides=check_slides)
        return replace(data, annotations=demo.annotations)


def task_file_data(path: Path, benchmark: str | None, wsi_root: Path, *, check_slides: bool) -> Loaded:
    """The task file's items (only `benchmark`'s, when set) and the folder their slides hang off."""
    from giant.data.multipathqa import content_hash  # pandas: only for a job that loads

    loaded = load_task_file(path, wsi_root, check_slides=check_slides)
    items = loaded.items
    if benchmark:
        items = [item for item in items if item.benchmark == benchmark]
        if not items:
            tasks = ", ".join(sorted({item.benchmark for item in loaded.items}))
            raise ConfigError(f"dataset.benchmark={benchmark}: no such task in {path}; its tasks: {tasks}")
    digests = DatasetDigests.of(items, location=str(path.absolute()))
    return Loaded(items, loaded.wsi_root, content_hash(items), digests)
