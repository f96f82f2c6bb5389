"""Accuracy and balanced accuracy with failures counted as incorrect, so n never shrinks
(paper_facts §6): a model that fails more cannot score higher by answering less."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.metrics import accuracy_score, recall_score

METRIC_NAMES = ("accuracy", "balanced_accuracy")
FAILED = -1  # stands in for a failure (None); never a valid label (options are 1-based, grades 0..5)


def score(truth: Sequence[int], pred: Sequence[int | None], metric: str) -> float:
    if metric == "accuracy":
        return accuracy(truth, pred)
    if metric == "balanced_accuracy":
        return balanced_accuracy(truth, pred)
    raise ValueError(f"unknown metric {metric!r}; use one of {', '.join(METRIC_NAMES)}")


def accuracy(truth: Sequence[int], pred: Sequence[int | None]) -> float:
    y_true, y_pred = _arrays(truth, pred)
    return float(accuracy_score(y_true, y_pred))


def balanced_accuracy(truth: Sequence[int], pred: Sequence[int | None]) -> float:
    """Mean recall over the classes present in the truth; predictions of other labels (and
    failures) only lower the recall of the true class, they add no class of their own."""
    y_true, y_pred = _arrays(truth, pred)
    classes = np.unique(y_true)
    return float(recall_score(y_true, y_pred, labels=classes, average="macro", zero_division=0))


def _arrays(truth: Sequence[int], pred: Sequence[int | None]) -> tuple[np.ndarray, np.ndarray]:
    if len(truth) != len(pred):
        raise ValueError(f"truth has {len(truth)} labels but pred has {len(pred)}")
    if not len(truth):
        raise ValueError("cannot score an empty item set")
    y_pred = [FAILED if p is None else p for p in pred]
    return np.asarray(truth, dtype=np.int64), np.asarray(y_pred, dtype=np.int64)
