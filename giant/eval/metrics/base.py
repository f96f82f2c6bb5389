"""A metric: truth and predicted labels -> a score in [0, 1], with failures counted as incorrect, so n
never shrinks (paper_facts §6): a model that fails more cannot score higher by answering less.

A metric scores the whole item set (`score`) and the bootstrap's replicates (`replicates`, one row of
resampled item indices each); override one: each defaults to the other, so a new metric may write
`score` alone (its replicates then score each row in a loop) and a vectorised one `replicates` alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from giant import registry

FAILED = -1  # stands in for a failure (None); never a valid label (options are 1-based, grades 0..5)

# Every registered metric by name (reading it imports every module of giant/eval/metrics/).
METRICS: Mapping[str, Metric] = registry.members("metric")


class Metric:
    name: ClassVar[str]  # the task's metric name, summary.json's key and the MLflow metric

    def score(self, y_true: np.ndarray, y_pred: np.ndarray) -> float:
        """The metric over every item (labels as integers, FAILED for a failure)."""
        return float(self.replicates(y_true, y_pred, np.arange(len(y_true))[None, :])[0])

    def replicates(
        self, y_true: np.ndarray, y_pred: np.ndarray, idx: np.ndarray, measured: np.ndarray | None = None
    ) -> np.ndarray:
        """The metric of each replicate (a row of `idx`), over its `measured` items only when given
        (NaN for a replicate without any)."""
        out = np.full(len(idx), np.nan)
        for row, drawn in enumerate(idx):
            kept = drawn if measured is None else drawn[measured[drawn]]
            if len(kept):
                out[row] = self.score(y_true[kept], y_pred[kept])
        return out


def metric(name: str) -> Metric:
    """The registered metric `name`; a ValueError line naming the registered ones otherwise."""
    return METRICS[registry.known("metric", name)]


def score(truth: Sequence[int], pred: Sequence[int | None], name: str) -> float:
    """The metric `name` of the predictions (None: a failure, scored incorrect)."""
    return metric(name).score(*labels(truth, pred))


def labels(truth: Sequence[int], pred: Sequence[int | None]) -> tuple[np.ndarray, np.ndarray]:
    """Truth and predictions as integer arrays, a failure as FAILED."""
    if len(truth) != len(pred):
        raise ValueError(f"truth has {len(truth)} labels but pred has {len(pred)}")
    if not len(truth):
        raise ValueError("cannot score an empty item set")
    y_pred = [FAILED if p is None else p for p in pred]
    return np.asarray(truth, dtype=np.int64), np.asarray(y_pred, dtype=np.int64)
