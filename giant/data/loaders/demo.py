"""The synthetic demo set (giant.data.demo), built once into paths.cache_dir: its questions are a task
file, its annotations the painted markers. With dataset.csv_path set it reads that CSV as MultiPathQA."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from giant.data.loaders.base import LOADERS, DatasetFields, Loaded, Loader
from giant.data.loaders.custom import task_file_data
from giant.registry import register


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
