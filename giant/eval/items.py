"""What makes a list of items one run: not empty, each key once, one metric. Checked by the runner and,
before any MLflow run or call, by the job and its dry run (giant.job), without the runner's imports."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from giant.core import Item
from giant.errors import ConfigError


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
