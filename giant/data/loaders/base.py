"""A dataset loader: the dataset's settings -> every item of its chosen task(s), where their slides are
and what the job records about the data (its hash for the run key, its digests, its defects). The job
picks `item_ids` and `limit` from those (giant.job.load_data): hash and digests are over the whole task."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Protocol

from giant import registry
from giant.core import Item
from giant.data.defects import Defect
from giant.data.digest import DatasetDigests

# Every registered loader by `dataset.source` (reading it imports every module of giant/data/loaders/).
LOADERS: Mapping[str, Loader] = registry.members("loader")


class DatasetFields(Protocol):
    """The settings a loader reads: `dataset.<key>` (giant.config.DatasetSettings, conf/dataset/)."""

    name: str
    benchmark: str | None
    path: Path | None
    csv_path: Path | None
    hf_repo: str
    hf_file: str
    slidebench_fix: Path | None
    drop_defective: bool


@dataclass(frozen=True)
class Loaded:
    items: list[Item]  # every item of the chosen task(s), before item_ids and limit
    wsi_root: Path  # the folder relative slide paths hang off
    dataset_hash: str  # over the items as loaded (giant.data.multipathqa.content_hash): the run key's
    digests: DatasetDigests
    defects: list[Defect] = field(default_factory=list)  # every one found; the job keeps those that matter
    annotations: Path | None = None  # the loader's own annotations folder when dataset.annotations has none


class Loader:
    name: ClassVar[str]  # the `dataset.source` it reads
    # dataset.path is its question file (required, and read by no other loader); it checks each
    # question's slide itself, so no slide folder needs to exist beforehand
    task_file: ClassVar[bool] = False

    def load(self, ds: DatasetFields, *, wsi_root: Path, cache_dir: Path, check_slides: bool) -> Loaded:
        """The dataset's items; `wsi_root` is dataset.wsi_root (or paths.wsi_root), `cache_dir` where
        downloads and built data go, `check_slides` False for a dry run (which lists missing slides
        itself). A problem with the data is a ConfigError line naming it and the fix."""
        raise NotImplementedError
