from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest
from sklearn.metrics import recall_score

from giant.eval.bootstrap import bootstrap, bootstrap_per_run_mean


def balanced_accuracy(truth: Sequence[int], pred: Sequence[int | None]) -> float:
    """scikit-learn's mean recall over the classes in the truth: a reference the vectorised metric is not."""
    y_pred = [-1 if p is None else p for p in pred]
    return float(recall_score(truth, y_pred, labels=np.unique(truth), average="macro", zero_division=0))


def test_accuracy_bootstrap_matches_the_binomial_std() -> None:
    n, hits = 128, 73  # p = 0.570
    truth = [1] * n
    pred: list[int | None] = [1] * hits + [2] * 20 + [None] * (n - hits - 20)
    result = bootstrap(truth, pred, "accuracy", replicates=1000, seed=0)
    p = hits / n
    assert result.point == pytest.approx(p)
    assert result.mean == pytest.approx(p, abs=0.01)
    assert result.std == pytest.approx(math.sqrt(p * (1 - p) / n), rel=0.1)  # ~4.4 points
    assert result.ci_low < p < result.ci_high
    assert result.ci_high - result.ci_low == pytest.approx(2 * 1.96 * math.sqrt(p * (1 - p) / n), rel=0.15)
    assert (result.replicates, result.seed) == (1000, 0)


def test_seed_is_reproducible_and_matters() -> None:
    truth = [1, 2, 3, 4] * 20
    pred = [1, 2, 1, 4] * 20
    a = bootstrap(truth, pred, "accuracy", seed=7)
    assert a == bootstrap(truth, pred, "accuracy", seed=7)
    assert a.mean != bootstrap(truth, pred, "accuracy", seed=8).mean


def test_balanced_bootstrap_equals_a_per_replicate_loop() -> None:
    """The vectorised replicates agree with scikit-learn on the same resampled indices, including
    replicates in which a rare class is absent."""
    rng = np.random.default_rng(3)
    truth = list(rng.choice([0, 1, 2, 3, 4, 5], size=60, p=[0.4, 0.3, 0.15, 0.1, 0.04, 0.01]))
    pred: list[int | None] = [t if rng.random() < 0.5 else (None if rng.random() < 0.3 else 0) for t in truth]
    result = bootstrap(truth, pred, "balanced_accuracy", replicates=200, seed=11)
    idx = np.random.default_rng(11).integers(0, 60, size=(200, 60))
    loop = [balanced_accuracy([truth[i] for i in row], [pred[i] for i in row]) for row in idx]
    assert result.mean == pytest.approx(float(np.mean(loop)))
    assert result.std == pytest.approx(float(np.std(loop, ddof=1)))
    assert result.point == pytest.approx(balanced_accuracy(truth, pred))


def test_full_size_balanced_bootstrap_stays_in_bounds() -> None:
    rng = np.random.default_rng(0)
    truth = list(rng.integers(1, 31, size=934))
    pred = list(rng.integers(1, 31, size=934))
    result = bootstrap(truth, pred, "balanced_accuracy", replicates=1000)
    assert 0.0 <= result.ci_low <= result.mean <= result.ci_high <= 1.0
    assert result.mean == pytest.approx(result.point, abs=0.01)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown metric"):
        bootstrap([1], [1], "auc")
    with pytest.raises(ValueError, match="replicates must be >= 1"):
        bootstrap([1], [1], "accuracy", replicates=0)


def test_per_run_mean_bootstrap_by_hand() -> None:
    """2 items x 2 runs: item 0 right in both runs, item 1 right in run 0 only. The runs score 1.0 and
    0.5, so the per-run mean is 0.75; a replicate draws two items, and its per-run mean is 1.0 (item 0
    twice), 0.5 (item 1 twice) or 0.75 (one of each): with one class per item, for balanced accuracy
    as well as for accuracy."""
    truth, runs = [1, 2], [[1, 2], [1, 3]]
    idx = np.random.default_rng(5).integers(0, 2, size=(400, 2))
    by_hand = np.asarray([1.0, 0.5])[idx].mean(axis=1)  # the mean over runs, item by item
    for metric in ("accuracy", "balanced_accuracy"):
        result = bootstrap_per_run_mean(truth, runs, metric, replicates=400, seed=5)
        assert result.point == pytest.approx(0.75)
        assert set(np.round(by_hand, 6)) == {0.5, 0.75, 1.0}
        assert result.mean == pytest.approx(float(by_hand.mean()))
        assert result.std == pytest.approx(float(by_hand.std(ddof=1)))
        assert (result.ci_low, result.ci_high) == (0.5, 1.0)
        assert result.std == pytest.approx(math.sqrt(0.03125), abs=0.015)  # 1/4 each extreme: var 1/32
        assert (result.replicates, result.seed) == (400, 5)


def test_per_run_mean_bootstrap_is_deterministic_by_seed() -> None:
    rng = np.random.default_rng(1)
    truth = [int(t) for t in rng.integers(1, 5, size=40)]
    runs = [[t if rng.random() < 0.6 else None for t in truth] for _ in range(3)]
    a = bootstrap_per_run_mean(truth, runs, "balanced_accuracy", seed=7)
    assert a == bootstrap_per_run_mean(truth, runs, "balanced_accuracy", seed=7)
    assert a.mean != bootstrap_per_run_mean(truth, runs, "balanced_accuracy", seed=8).mean
    # the same index matrix as the vote's bootstrap: one run alone gives bootstrap's figures
    assert bootstrap_per_run_mean(truth, runs[:1], "accuracy", seed=7) == bootstrap(
        truth, runs[0], "accuracy", seed=7
    )


def test_per_run_mean_bootstrap_equals_a_loop_with_unmeasured_results() -> None:
    """Each replicate scores each run over the resampled items it measured (balanced accuracy over
    the classes present among them), then averages the runs: checked against scikit-learn."""
    rng = np.random.default_rng(4)
    truth = list(rng.choice([0, 1, 2, 3], size=30, p=[0.5, 0.3, 0.15, 0.05]))
    runs = [
        [t if rng.random() < 0.6 else (None if rng.random() < 0.3 else 0) for t in truth] for _ in range(3)
    ]
    measured = [[bool(rng.random() < 0.8) for _ in truth] for _ in range(3)]
    measured[0] = [True] * 30  # every item measured by some run
    result = bootstrap_per_run_mean(
        truth, runs, "balanced_accuracy", measured=measured, replicates=150, seed=2
    )
    idx = np.random.default_rng(2).integers(0, 30, size=(150, 30))
    loop = [
        np.mean(
            [
                balanced_accuracy([truth[i] for i in row if has[i]], [labels[i] for i in row if has[i]])
                for labels, has in zip(runs, measured, strict=True)
                if any(has[i] for i in row)
            ]
        )
        for row in idx
    ]
    assert result.mean == pytest.approx(float(np.mean(loop)))
    assert result.std == pytest.approx(float(np.std(loop, ddof=1)))
    points = [
        balanced_accuracy(
            [t for t, h in zip(truth, has, strict=True) if h],
            [p for p, h in zip(labels, has, strict=True) if h],
        )
        for labels, has in zip(runs, measured, strict=True)
    ]
    assert result.point == pytest.approx(float(np.mean(points)))


def test_per_run_mean_bootstrap_bad_arguments() -> None:
    with pytest.raises(ValueError, match="one label"):
        bootstrap_per_run_mean([1, 2], [[1]], "accuracy")
    with pytest.raises(ValueError, match="at least one run"):
        bootstrap_per_run_mean([1, 2], [[1, 2]], "accuracy", measured=[[True, False]])
