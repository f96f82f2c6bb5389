"""Majority vote over independent runs of one item (GIANT x5). The paper does not publish its
tie-break, so ours is a named rule that summary.json records."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from giant.errors import ConfigError
from giant.record import ResultRecord

TIE_RULES = ("lowest_run_index",)


def majority_vote(labels_by_run: Sequence[int | None], tie_rule: str = "lowest_run_index") -> int | None:
    """Failed runs (None) do not vote; a tie goes to the tied label that the lowest run index gave;
    None when every run failed."""
    if tie_rule not in TIE_RULES:
        raise ConfigError(f"unknown tie rule {tie_rule!r}; use one of {', '.join(TIE_RULES)}")
    counts = Counter(label for label in labels_by_run if label is not None)
    if not counts:
        return None
    top = max(counts.values())
    return next(label for label in labels_by_run if label is not None and counts[label] == top)


def item_label(runs: Iterable[ResultRecord], runs_per_item: int, tie_rule: str) -> int | None:
    """One item's scored label from the latest record of each of its run slots: with k > 1 runs their
    majority vote (failed runs do not vote), else the one run's label. The summary and a comparison
    both score an item through here, so a comparison pairs exactly the labels the job reported."""
    labels: list[int | None] = [None] * runs_per_item
    for record in runs:
        labels[record.run_index] = record.label
    return majority_vote(labels, tie_rule) if runs_per_item > 1 else labels[0]
