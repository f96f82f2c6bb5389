"""What the model answered against the truth: the confusion matrix (failures in their own column),
recall per true class, and the distribution of predicted labels with a flag when one label takes most
of them (a model that calls nearly every slide "benign" can look fine on accuracy alone)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pandas as pd

from giant.record import ResultRecord
from giant.tracking.artifacts import NO_ANSWER, confusion_table

DOMINANT_SHARE = 0.5  # a label given for more than this share of the answered item-runs is flagged


@dataclass(frozen=True)
class ClassRecall:
    label: str
    n: int  # item-runs whose truth is this label
    hits: int

    @property
    def recall(self) -> float:
        return self.hits / self.n if self.n else 0.0


@dataclass(frozen=True)
class Predicted:
    label: str  # a label, or NO_ANSWER for item-runs without one
    count: int
    truly: int  # of them, how many have this label as their truth


@dataclass(frozen=True)
class Dominant:
    label: str
    count: int
    answered: int
    truly: int

    @property
    def share(self) -> float:
        return self.count / self.answered


def confusion(records: list[ResultRecord]) -> pd.DataFrame:
    """Truth (rows) x predicted label (columns), the same table as confusion_matrix.png."""
    frame = pd.DataFrame({"truth": [r.truth for r in records], "label": [r.label for r in records]})
    return confusion_table(frame)


def recalls(table: pd.DataFrame) -> list[ClassRecall]:
    """Recall of each true class; failures count as misses, as in balanced accuracy."""
    return [
        ClassRecall(label=str(label), n=int(table.loc[label].sum()), hits=int(table.loc[label].get(label, 0)))
        for label in table.index
    ]


def predicted(records: list[ResultRecord]) -> list[Predicted]:
    """Predicted labels, most frequent first; item-runs without a label last, as NO_ANSWER."""
    counts = Counter(NO_ANSWER if r.label is None else str(r.label) for r in records)
    truly = Counter(str(r.label) for r in records if r.label is not None and r.label == r.truth)
    order = sorted(counts, key=lambda label: (label == NO_ANSWER, -counts[label], label))
    return [Predicted(label, counts[label], truly.get(label, 0)) for label in order]


def dominant(rows: list[Predicted]) -> Dominant | None:
    """The label given for most of the answered item-runs, if one is."""
    answered = sum(row.count for row in rows if row.label != NO_ANSWER)
    top = next((row for row in rows if row.label != NO_ANSWER), None)
    if top is None or top.count <= DOMINANT_SHARE * answered:
        return None
    return Dominant(label=top.label, count=top.count, answered=answered, truly=top.truly)
