from __future__ import annotations

import pytest

from giant.errors import ConfigError
from giant.eval.voting import item_label, majority_vote
from giant.record import ResultRecord


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ([2, 2, 3, 3, 3], 3),  # plain majority
        ([1, None, None, None, 4, 1], 1),  # failures do not vote, even when they are the most common
        ([3, 1, 1, 3, 2], 3),  # tie 3 vs 1: run 0 gave 3
        ([None, 4, 2, 2, 4], 4),  # tie 4 vs 2: the earliest voting run (1) gave 4
        ([5, 1, 2], 5),  # all tied at one vote
        ([None], None),
        ([None, None, None, None, None], None),
        ([], None),
        ([0, 0, 1], 0),  # grade 0 is a real label, not a failure
    ],
)
def test_majority_vote(labels: list[int | None], expected: int | None) -> None:
    assert majority_vote(labels) == expected


def test_unknown_tie_rule() -> None:
    with pytest.raises(ConfigError, match="unknown tie rule 'random'"):
        majority_vote([1, 2], tie_rule="random")


def _run(run_index: int, label: int | None) -> ResultRecord:
    return ResultRecord(
        key="t/1",
        benchmark="t",
        run_index=run_index,
        seed=0,
        prediction=None,
        label=label,
        truth=1,
        correct=label == 1,
        status="answered" if label is not None else "unparseable",
    )


def test_an_items_label_is_its_runs_vote_by_run_index_in_any_order() -> None:
    """The summary and a comparison score an item through item_label: runs given out of order still
    break a tie by the lowest run index; one run is its own label, a failed one none."""
    runs = [_run(2, 2), _run(0, 3), _run(1, 2), _run(3, 3), _run(4, None)]
    assert item_label(runs, 5, "lowest_run_index") == 3
    assert item_label([_run(0, 4)], 1, "lowest_run_index") == 4
    assert item_label([_run(0, None)], 1, "lowest_run_index") is None
