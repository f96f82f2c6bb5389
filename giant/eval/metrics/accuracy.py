"""Accuracy: the share of items answered with the true label."""

from __future__ import annotations

import numpy as np

from giant.eval.metrics.base import Metric
from giant.registry import register


@register("metric")
class Accuracy(Metric):
    name = "accuracy"

    def replicates(
        self, y_true: np.ndarray, y_pred: np.ndarray, idx: np.ndarray, measured: np.ndarray | None = None
    ) -> np.ndarray:
        correct = y_true == y_pred
        if measured is None:
            return correct[idx].mean(axis=1)
        counts = measured[idx].sum(axis=1)
        hits = (correct & measured)[idx].sum(axis=1)
        return np.divide(hits, counts, out=np.full(len(idx), np.nan), where=counts > 0)
