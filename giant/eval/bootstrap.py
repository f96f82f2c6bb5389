"""Bootstrap over items (paper_facts §6: 1000 replicates, reported as mean +- std).

Vectorised: every replicate's resampled correctness and class counts come from one index matrix,
so 1000 x 934 costs milliseconds instead of 1000 scikit-learn calls.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from giant.eval.metrics import FAILED, METRIC_NAMES, score
from giant.record.summary import Bootstrap


def bootstrap(
    truth: Sequence[int],
    pred: Sequence[int | None],
    metric: str,
    *,
    replicates: int = 1000,
    seed: int = 0,
) -> Bootstrap:
    check_arguments(metric, replicates)
    point = score(truth, pred, metric)  # also validates lengths and emptiness
    values = replicate_scores(truth, pred, metric, resamples(len(truth), replicates, seed))
    return interval(point, values, replicates, seed)


def check_arguments(metric: str, replicates: int) -> None:
    if metric not in METRIC_NAMES:
        raise ValueError(f"unknown metric {metric!r}; use one of {', '.join(METRIC_NAMES)}")
    if replicates < 1:
        raise ValueError(f"replicates must be >= 1, got {replicates}")


def replicate_scores(
    truth: Sequence[int], pred: Sequence[int | None], metric: str, idx: np.ndarray
) -> np.ndarray:
    """The metric of each replicate (one row of item indices per replicate). Public so a paired
    comparison (giant.compare) can score two runs on the very same index matrix."""
    y_true = np.asarray(truth, dtype=np.int64)
    correct = y_true == np.asarray([FAILED if p is None else p for p in pred], dtype=np.int64)
    if metric == "accuracy":
        return correct[idx].mean(axis=1)
    return _balanced_per_replicate(y_true, correct, idx)


def bootstrap_mean(values: Sequence[float], *, replicates: int = 1000, seed: int = 0) -> Bootstrap:
    """The mean of `values` and its bootstrap interval (the dry run's pilot forecast of per-item cost)."""
    if not values or replicates < 1:
        raise ValueError(
            f"need values and replicates >= 1, got {len(values)} values, {replicates} replicates"
        )
    data = np.asarray(values, dtype=np.float64)
    means = data[resamples(len(data), replicates, seed)].mean(axis=1)
    return interval(float(data.mean()), means, replicates, seed)


def resamples(n: int, replicates: int, seed: int) -> np.ndarray:
    """One row of n indices drawn with replacement per replicate."""
    return np.random.default_rng(seed).integers(0, n, size=(replicates, n))


def interval(point: float, values: np.ndarray, replicates: int, seed: int) -> Bootstrap:
    """The point value with the replicates' mean, std and 95% percentile interval."""
    low, high = np.percentile(values, [2.5, 97.5])
    return Bootstrap(
        point=point,
        mean=float(values.mean()),
        std=float(values.std(ddof=1)) if replicates > 1 else 0.0,
        ci_low=float(low),
        ci_high=float(high),
        replicates=replicates,
        seed=seed,
    )


def _balanced_per_replicate(y_true: np.ndarray, correct: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Mean recall over the classes present in each replicate's own truth."""
    _, cls = np.unique(y_true, return_inverse=True)
    n_classes = int(cls.max()) + 1
    replicates = idx.shape[0]
    flat = (np.arange(replicates)[:, None] * n_classes + cls[idx]).ravel()
    totals = np.bincount(flat, minlength=replicates * n_classes).reshape(replicates, n_classes)
    hits = np.bincount(flat, weights=correct[idx].ravel(), minlength=replicates * n_classes)
    hits = hits.reshape(replicates, n_classes)
    present = totals > 0
    recall = np.divide(hits, totals, out=np.zeros_like(hits), where=present)
    return recall.sum(axis=1) / present.sum(axis=1)
