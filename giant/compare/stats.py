"""The statistics of a paired comparison: two runs answered the same items, so each item is one
paired observation and the run-to-run noise of the item set cancels out of the difference.

- `paired_bootstrap`: items resampled jointly (one index matrix scores both runs), the metric
  recomputed per replicate (balanced accuracy from each replicate's own classes), the interval of
  the difference B - A;
- `mcnemar_exact`: the two-sided exact test on the discordant items (a binomial test with p = 1/2);
- `holm`: step-down adjusted p-values for a family of tests.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import binomtest

from giant.eval.bootstrap import check_arguments, interval, replicate_scores, resamples
from giant.eval.metrics import score
from giant.record.summary import Bootstrap


class PairedDifference(Bootstrap):
    """B - A as fractions in [-1, 1]: the point value on the common items and its bootstrap
    percentile interval."""

    @property
    def excludes_zero(self) -> bool:
        return self.ci_low > 0 or self.ci_high < 0


def paired_differences(
    truth: Sequence[int],
    pred_a: Sequence[int | None],
    pred_b: Sequence[int | None],
    metric: str,
    idx: np.ndarray,
) -> np.ndarray:
    """metric(B) - metric(A) of each replicate, both scored on the same resampled items."""
    return replicate_scores(truth, pred_b, metric, idx) - replicate_scores(truth, pred_a, metric, idx)


def paired_bootstrap(
    truth: Sequence[int],
    pred_a: Sequence[int | None],
    pred_b: Sequence[int | None],
    metric: str,
    *,
    replicates: int = 1000,
    seed: int = 0,
) -> PairedDifference:
    check_arguments(metric, replicates)
    if len(pred_a) != len(pred_b):
        raise ValueError(f"run A has {len(pred_a)} answers but run B has {len(pred_b)}")
    point = score(truth, pred_b, metric) - score(truth, pred_a, metric)  # validates truth's length
    values = paired_differences(truth, pred_a, pred_b, metric, resamples(len(truth), replicates, seed))
    return PairedDifference(**interval(point, values, replicates, seed).model_dump())


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (items only A got right, items
    only B got right): under "no difference" each discordant item is a fair coin, so the p-value is
    twice the smaller binomial tail, capped at 1. No discordant item: p = 1."""
    if a_only < 0 or b_only < 0:
        raise ValueError(f"discordant counts must be >= 0, got {a_only} and {b_only}")
    n = a_only + b_only
    if n == 0:  # binomtest needs at least one trial
        return 1.0
    # scipy sums the tail in floating point (milliseconds at n = 10,200, where exact integer
    # binomial coefficients took seconds)
    return float(binomtest(a_only, n, 0.5, alternative="two-sided").pvalue)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment, in the input order: the i-th smallest p is multiplied by
    (m - i), kept monotone, capped at 1. It controls the family-wise error without assuming the
    tests are independent (pairs of one task share runs)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
