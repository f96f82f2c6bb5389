"""The comparison's statistics against independent computations: scipy's exact binomial test for
McNemar, hand-computed replicates for the paired bootstrap, a per-replicate loop over the metric
functions, and a case where the unpaired intervals overlap while the paired test is clear."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom, binomtest

from giant.compare.stats import holm, mcnemar_exact, paired_bootstrap, paired_differences
from giant.eval.bootstrap import bootstrap, resamples
from giant.eval.metrics import score


@pytest.mark.parametrize(
    ("a_only", "b_only"), [(0, 0), (0, 6), (6, 0), (3, 1), (1, 3), (5, 5), (2, 9), (17, 30)]
)
def test_mcnemar_exact_is_the_two_sided_binomial_test_on_the_discordant_items(
    a_only: int, b_only: int
) -> None:
    n = a_only + b_only
    expected = binomtest(a_only, n, 0.5, alternative="two-sided").pvalue if n else 1.0
    assert mcnemar_exact(a_only, b_only) == pytest.approx(expected, rel=1e-12)


def test_mcnemar_exact_by_hand_and_at_the_size_of_a_whole_sweep() -> None:
    # tails summed by hand: P(X <= 1) for n = 5 is (1 + 5) / 32, doubled
    assert mcnemar_exact(1, 4) == pytest.approx(2 * 6 / 32, rel=1e-12)
    assert mcnemar_exact(4, 1) == pytest.approx(2 * 6 / 32, rel=1e-12)
    assert mcnemar_exact(5, 5) == 1.0  # the tails overlap: capped at 1
    # n = 10,200: twice the lower tail of the binomial CDF, computed by scipy's other route
    assert mcnemar_exact(5000, 5200) == pytest.approx(2 * binom.cdf(5000, 10200, 0.5), rel=1e-9)


def test_holm_by_hand() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 = 0.02, 0.03, 0.06, 0.04 -> monotone 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm([0.2]) == pytest.approx([0.2])


TRUTH = [1, 1, 2, 2]
PRED_A = [1, 2, 2, 1]  # right on items 0 and 2
PRED_B = [1, 1, 2, 2]  # right everywhere


def test_paired_replicates_by_hand() -> None:
    """Each replicate scores both runs on the same resampled items, balanced accuracy over the
    classes of that replicate's own truth."""
    idx = np.array([[0, 0, 1, 1], [2, 3, 3, 3], [1, 2, 2, 2], [0, 1, 2, 3]])
    # accuracy  A: 2/4, 1/4, 3/4, 2/4   B: 1 each
    acc = paired_differences(TRUTH, PRED_A, PRED_B, "accuracy", idx)
    assert acc == pytest.approx([0.5, 0.75, 0.25, 0.5])
    # balanced  row 0: only class 1, A recall 1/2; row 1: only class 2, A recall 1/4;
    # row 2: class 1 recall 0 (item 1 wrong), class 2 recall 1 -> 1/2; row 3: (1/2 + 1/2) / 2
    bal = paired_differences(TRUTH, PRED_A, PRED_B, "balanced_accuracy", idx)
    assert bal == pytest.approx([0.5, 0.75, 0.5, 0.5])


def test_paired_bootstrap_recomputes_the_metric_per_replicate() -> None:
    rng = np.random.default_rng(7)
    truth = rng.integers(0, 4, size=30).tolist()
    pred_a = [t if rng.random() < 0.5 else None for t in truth]
    pred_b = [t if rng.random() < 0.7 else (t + 1) % 4 for t in truth]
    for metric in ("accuracy", "balanced_accuracy"):
        result = paired_bootstrap(truth, pred_a, pred_b, metric, replicates=200, seed=3)
        idx = resamples(len(truth), 200, 3)
        loop = [
            score([truth[i] for i in row], [pred_b[i] for i in row], metric)
            - score([truth[i] for i in row], [pred_a[i] for i in row], metric)
            for row in idx
        ]
        low, high = np.percentile(loop, [2.5, 97.5])
        assert result.point == pytest.approx(score(truth, pred_b, metric) - score(truth, pred_a, metric))
        assert result.mean == pytest.approx(np.mean(loop))
        assert result.std == pytest.approx(np.std(loop, ddof=1))
        assert (result.ci_low, result.ci_high) == pytest.approx((low, high))


def test_unpaired_intervals_overlap_but_the_paired_test_is_clear() -> None:
    """B is right on every item A is right on, plus 6 more: alone each run's interval is wide and they
    overlap, but on the same items every discordant item favours B."""
    n = 40
    truth = [1] * n
    pred_a = [1] * 20 + [2] * 20
    pred_b = [1] * 26 + [2] * 14
    alone_a = bootstrap(truth, pred_a, "accuracy", replicates=2000, seed=1)
    alone_b = bootstrap(truth, pred_b, "accuracy", replicates=2000, seed=1)
    assert alone_a.ci_high > alone_b.ci_low  # unpaired: the intervals overlap
    paired = paired_bootstrap(truth, pred_a, pred_b, "accuracy", replicates=2000, seed=1)
    assert paired.point == pytest.approx(0.15)
    assert paired.ci_low > 0 and paired.excludes_zero
    assert mcnemar_exact(0, 6) == pytest.approx(2 / 2**6)
    assert mcnemar_exact(0, 6) < 0.05


def test_bad_metric_or_lengths_are_errors() -> None:
    with pytest.raises(ValueError, match="unknown metric"):
        paired_bootstrap(TRUTH, PRED_A, PRED_B, "f1")
    with pytest.raises(ValueError, match="answers"):
        paired_bootstrap(TRUTH, PRED_A[:3], PRED_B, "accuracy")
    with pytest.raises(ValueError, match=">= 0"):
        mcnemar_exact(-1, 2)
