from __future__ import annotations

from collections.abc import Sequence

import pytest

from giant.eval.metrics import METRICS, score


def accuracy(truth: Sequence[int], pred: Sequence[int | None]) -> float:
    return score(truth, pred, "accuracy")


def balanced_accuracy(truth: Sequence[int], pred: Sequence[int | None]) -> float:
    return score(truth, pred, "balanced_accuracy")


def test_the_shipped_metrics_are_registered_under_their_logged_names() -> None:
    assert list(METRICS) == ["accuracy", "balanced_accuracy"]  # stored runs hold these MLflow names


def test_accuracy_counts_failures_as_incorrect() -> None:
    truth = [1, 2, 3, 4, 1]
    pred = [1, 2, None, 1, None]
    assert accuracy(truth, pred) == pytest.approx(2 / 5)
    assert score(truth, pred, "accuracy") == pytest.approx(2 / 5)


def test_balanced_accuracy_imbalanced_by_hand() -> None:
    # class 1: 6 items, 5 right; class 2: 3 items, 1 right (one failure); class 3: 1 item, 0 right.
    truth = [1, 1, 1, 1, 1, 1, 2, 2, 2, 3]
    pred = [1, 1, 1, 1, 1, 2, 2, None, 1, 1]
    expected = (5 / 6 + 1 / 3 + 0 / 1) / 3
    assert balanced_accuracy(truth, pred) == pytest.approx(expected)
    assert score(truth, pred, "balanced_accuracy") == pytest.approx(expected)
    assert accuracy(truth, pred) == pytest.approx(6 / 10)


def test_balanced_accuracy_ignores_predicted_classes_absent_from_truth() -> None:
    # predicting label 5 (never true) or 0 must not add a class with recall 0 to the mean
    truth = [1, 1, 2, 2]
    pred = [1, 5, 2, 0]
    assert balanced_accuracy(truth, pred) == pytest.approx(0.5)


def test_majority_baseline_balanced_accuracy_is_chance() -> None:
    truth = [0] * 50 + [1] * 30 + [2] * 10 + [3] * 5 + [4] * 3 + [5] * 2
    assert balanced_accuracy(truth, [0] * 100) == pytest.approx(1 / 6)
    assert accuracy(truth, [0] * 100) == pytest.approx(0.5)


def test_all_failures_score_zero() -> None:
    assert balanced_accuracy([1, 2], [None, None]) == 0.0
    assert accuracy([1, 2], [None, None]) == 0.0


@pytest.mark.parametrize(
    ("truth", "pred", "metric", "message"),
    [
        ([1], [1], "f1", "unknown metric 'f1'"),
        ([1, 2], [1], "accuracy", "truth has 2 labels but pred has 1"),
        ([], [], "accuracy", "empty"),
    ],
)
def test_bad_input(truth: list[int], pred: list[int | None], metric: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        score(truth, pred, metric)
