"""Your own task file (dataset=custom dataset.path=FILE, CSV or JSONL; docs/custom_tasks.md): every
row checked before anything is paid, every problem on its own line (a ConfigError: exit 2, no MLflow
run, no call)."""

from __future__ import annotations

from pathlib import Path

from giant.data.custom import load_task_file
from giant.data.digest import DatasetDigests
from giant.data.loaders.base import DatasetFields, Loaded, Loader
from giant.errors import ConfigError
from giant.registry import register


@register("loader")
class TaskFileLoader(Loader):
    name = "custom"
    task_file = True

    def load(self, ds: DatasetFields, *, wsi_root: Path, cache_dir: Path, check_slides: bool) -> Loaded:
        assert ds.path is not None  # RunSettings.cross_check
        return task_file_data(ds.path, ds.benchmark, wsi_root, check_slides=check_slides)


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
