"""Bootstrap over items (paper_facts §6: 1000 replicates, reported as mean +- std).

Every replicate is a row of one index matrix; the metric (giant.eval.metrics) scores all rows at once.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import numpy as np

from giant.eval.metrics import base as metrics
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
    point = metrics.score(truth, pred, metric)  # also validates lengths and emptiness
    values = replicate_scores(truth, pred, metric, resamples(len(truth), replicates, seed))
    return interval(point, values, replicates, seed)


def bootstrap_per_run_mean(
    truth: Sequence[int],
    runs: Sequence[Sequence[int | None]],
    metric: str,
    *,
    measured: Sequence[Sequence[bool]] | None = None,
    replicates: int = 1000,
    seed: int = 0,
) -> Bootstrap:
    """The mean over a k-run job's runs of each run's own metric (the "x1" figure beside the k-run
    vote) with its bootstrap over items: each replicate resamples the items once, scores every run on
    that resample (the metric recomputed per run and replicate) and averages the runs.

    `runs[k][i]` is run k's label of item i (None: failed, counted incorrect); `measured[k][i]` False
    where run k has no result for item i, which then leaves it out of run k's metric (as summarize's
    per-run metric does); a run without any measured item is left out of the mean. The index matrix is
    `bootstrap`'s for the same seed and item count, so the two intervals of a job are paired."""
    check_arguments(metric, replicates)
    y_true = np.asarray(truth, dtype=np.int64)
    n = len(y_true)
    mask = np.ones((len(runs), n), dtype=bool) if measured is None else np.asarray(measured, dtype=bool)
    if not runs or mask.shape != (len(runs), n) or any(len(labels) != n for labels in runs):
        raise ValueError(f"need one label (and measured flag) per item in every run, for {n} items")
    if not n or not mask.any(axis=0).all():
        raise ValueError("every item needs a measured result in at least one run")
    scores = [
        metrics.score(
            [t for t, h in zip(truth, has, strict=True) if h],
            [p for p, h in zip(labels_k, has, strict=True) if h],
            metric,
        )
        for labels_k, has in zip(runs, mask, strict=True)
        if has.any()
    ]
    idx = resamples(n, replicates, seed)
    per_run = np.stack(
        [
            metrics.metric(metric).replicates(*metrics.labels(truth, labels_k), idx, has)
            for labels_k, has in zip(runs, mask, strict=True)
            if has.any()
        ]
    )  # runs x replicates; NaN where a replicate drew no item of that run
    return interval(statistics.fmean(scores), np.nanmean(per_run, axis=0), replicates, seed)


def check_arguments(metric: str, replicates: int) -> None:
    metrics.metric(metric)  # a registered one
    if replicates < 1:
        raise ValueError(f"replicates must be >= 1, got {replicates}")


def replicate_scores(
    truth: Sequence[int], pred: Sequence[int | None], metric: str, idx: np.ndarray
) -> np.ndarray:
    """The metric of each replicate (one row of item indices per replicate). Public so a paired
    comparison (giant.compare) can score two runs on the very same index matrix."""
    return metrics.metric(metric).replicates(*metrics.labels(truth, pred), idx)


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
