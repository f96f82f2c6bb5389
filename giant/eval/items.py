"""A job's data (`JobData`) and what makes its items one run: not empty, each key once, one metric.
Checked by the runner and, before any MLflow run or call, by the job and its dry run (giant.job),
without the runner's imports."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from giant.core import Item
from giant.errors import ConfigError

if TYPE_CHECKING:
    from giant.data.defects import Defect
    from giant.data.digest import DatasetDigests
    from giant.data.slides import Located
    from giant.eval.annotation_settings import AnnotationSettings


@dataclass(frozen=True)
class JobData:
    """What a job measures, from its dataset's loader (giant.job.load_data) to the runner: the items,
    their slides' root, the dataset's hash, the defects that concern the items, which version of each
    task it scores (giant.data.digest), the annotations (dataset.annotations, the demo's filled in) and
    each item's slide as giant.data.slides.locate_all found it (None: not looked up yet)."""

    items: Sequence[Item]
    wsi_root: Path
    dataset_hash: str
    defects: Sequence[Defect] = ()
    digests: DatasetDigests | None = None
    annotations: AnnotationSettings | None = None
    located: Mapping[str, Located] | None = None


def check_items(items: Sequence[Item]) -> tuple[str, str]:
    """(dataset name, metric name); a run is one dataset scored with one metric."""
    if not items:
        raise ConfigError("the run has no items; check the dataset path and its filters")
    repeated = [key for key, n in Counter(item.key for item in items).items() if n > 1]
    if repeated:
        dup = repeated[0]
        raise ConfigError(
            f"item key {dup} appears more than once; each (benchmark, benchmark_id) must be unique"
        )
    metrics = {item.metric for item in items}
    benchmarks = sorted({item.benchmark for item in items})
    if len(metrics) > 1:
        raise ConfigError(
            f"the items mix metrics {sorted(metrics)} (tasks {benchmarks}); run one task per job"
        )
    return "+".join(benchmarks), metrics.pop()
