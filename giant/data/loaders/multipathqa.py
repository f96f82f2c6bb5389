"""MultiPathQA.csv, local (dataset.csv_path) or downloaded from the Hub (hf_repo, hf_file)."""

from __future__ import annotations

import logging
from pathlib import Path

from giant.data.digest import DatasetDigests
from giant.data.loaders.base import DatasetFields, Loaded, Loader
from giant.registry import register

log = logging.getLogger(__name__)


@register("loader")
class MultiPathQA(Loader):
    name = "multipathqa"

    def load(self, ds: DatasetFields, *, wsi_root: Path, cache_dir: Path, check_slides: bool) -> Loaded:
        from giant.data.hub import HubFile  # pandas and the Hub client: only for a job that reads the CSV
        from giant.data.multipathqa import load_multipathqa

        csv = ds.csv_path or HubFile(ds.hf_repo, ds.hf_file, cache_dir / "hf")
        dataset = load_multipathqa(
            csv,
            benchmarks=[ds.benchmark] if ds.benchmark else None,
            slidebench_fix=ds.slidebench_fix,
            drop_defective=ds.drop_defective,
        )
        for d in dataset.defects:
            log.warning("dataset: %s/%s %s (%s)", d.benchmark, d.benchmark_id, d.description, d.resolution)
        digests = DatasetDigests.of(dataset.items, location=dataset.source)
        return Loaded(dataset.items, wsi_root, dataset.content_hash, digests, dataset.defects)
