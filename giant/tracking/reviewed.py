"""A pathologist's verdicts read back: the reviewed evidence hit rate of a job, from the HUMAN
assessments a review (scripts/review.py, MLflow's review UI) left on its traces.

The annotation-based hit rate exists only where a task has annotations (PANDA); a reviewer's
"did the crops show the evidence for the answer?" is the same question asked of any slide. A trace's
verdict is its reviewers' majority (a tie counts as a miss: the evidence was not clear), taken from
the trace-level assessment, or, where a reviewer judged crops one by one (assessments on the spans
that sent them), a pass when any crop passed. Two reviewers of the same traces give Cohen's kappa.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

from mlflow.entities import Assessment, AssessmentSourceType, Trace
from pydantic import BaseModel

from giant.tracking.names import REVIEW_EVIDENCE, TRACE_ITEM_TAG, TRACE_RUN_TAG

Z95 = 1.959963984540054


class ReviewedRate(BaseModel):
    """The reviewed evidence hit rate of one job (or method): hits of n reviewed item-runs, with its
    95% Wilson interval; kappa where two reviewers judged the same item-runs (None otherwise)."""

    n: int
    hits: int
    low: float
    high: float
    kappa: float | None = None
    kappa_n: int = 0  # item-runs both reviewers of the kappa judged

    @property
    def rate(self) -> float:
        return self.hits / self.n if self.n else math.nan

    def text(self) -> str:
        """One cell: `0.62 [0.41, 0.79] n=16`, and the agreement where there is one."""
        if not self.n:
            return "not reviewed"
        agreement = f", kappa {self.kappa:.2f} (n={self.kappa_n})" if self.kappa is not None else ""
        return f"{self.rate:.2f} [{self.low:.2f}, {self.high:.2f}] n={self.n}{agreement}"


def wilson(hits: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion: sensible at small n and at 0 or n hits."""
    if n == 0:
        return (math.nan, math.nan)
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def cohen_kappa(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of two raters' pass/fail verdicts on the same items (None: no items, or both
    raters gave one verdict throughout, where chance agreement is total and kappa undefined)."""
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    first = sum(a for a, _ in pairs) / n
    second = sum(b for _, b in pairs) / n
    chance = first * second + (1 - first) * (1 - second)
    if chance == 1.0:
        return None
    return (observed - chance) / (1 - chance)


def verdicts(trace: Trace) -> dict[str, bool]:
    """Each HUMAN reviewer's evidence verdict on one trace (reviewer id -> pass)."""
    trace_level: dict[str, bool] = {}
    crops: dict[str, list[bool]] = defaultdict(list)
    for assessment in _human(trace.info.assessments):
        reviewer = assessment.source.source_id or "unknown"
        value = bool(assessment.value)  # type: ignore[attr-defined]  # a Feedback's value
        if assessment.span_id is None:
            trace_level[reviewer] = value
        else:
            crops[reviewer].append(value)
    found = {reviewer: any(values) for reviewer, values in crops.items()}
    found.update(trace_level)  # a reviewer's verdict on the whole trace outweighs their crop verdicts
    return found


def reviewed_rate(traces: Iterable[Trace]) -> ReviewedRate:
    """The reviewed evidence hit rate over the traces a reviewer judged (the others do not count)."""
    judged = [found for found in (verdicts(trace) for trace in traces) if found]
    hits = sum(sum(found.values()) * 2 > len(found) for found in judged)
    low, high = wilson(hits, len(judged))
    kappa, kappa_n = _agreement(judged)
    return ReviewedRate(n=len(judged), hits=hits, low=low, high=high, kappa=kappa, kappa_n=kappa_n)


class PairedReview(BaseModel):
    """Two jobs' reviewed verdicts on the item-runs reviewed in both (same item, same run index):
    hits of each, and the discordant pairs a paired test rests on."""

    n: int
    first_hits: int
    second_hits: int
    first_only: int  # a hit in the first job, a miss in the second
    second_only: int

    def text(self) -> str:
        if not self.n:
            return "no item-run reviewed in both"
        return (
            f"{self.first_hits}/{self.n} vs {self.second_hits}/{self.n} reviewed in both "
            f"(hit in the first only: {self.first_only}, in the second only: {self.second_only})"
        )


def paired_review(first: Iterable[Trace], second: Iterable[Trace]) -> PairedReview:
    """The item-runs two jobs share and a reviewer judged in both."""
    a, b = _by_slot(first), _by_slot(second)
    both = sorted(set(a) & set(b))
    return PairedReview(
        n=len(both),
        first_hits=sum(a[slot] for slot in both),
        second_hits=sum(b[slot] for slot in both),
        first_only=sum(a[slot] and not b[slot] for slot in both),
        second_only=sum(b[slot] and not a[slot] for slot in both),
    )


def _by_slot(traces: Iterable[Trace]) -> dict[tuple[str, str], bool]:
    found: dict[tuple[str, str], bool] = {}
    for trace in traces:
        judged = verdicts(trace)
        if judged:
            slot = (trace.info.tags.get(TRACE_ITEM_TAG, ""), trace.info.tags.get(TRACE_RUN_TAG, "0"))
            found[slot] = sum(judged.values()) * 2 > len(judged)
    return found


def _agreement(judged: Sequence[dict[str, bool]]) -> tuple[float | None, int]:
    """Kappa of the two reviewers who judged the most item-runs in common."""
    shared: dict[tuple[str, str], list[tuple[bool, bool]]] = defaultdict(list)
    for found in judged:
        reviewers = sorted(found)
        for i, first in enumerate(reviewers):
            for second in reviewers[i + 1 :]:
                shared[first, second].append((found[first], found[second]))
    if not shared:
        return (None, 0)
    pairs = max(shared.values(), key=len)
    return (cohen_kappa(pairs), len(pairs))


def _human(assessments: Iterable[Assessment]) -> Iterable[Assessment]:
    return (
        assessment
        for assessment in assessments
        if assessment.name == REVIEW_EVIDENCE
        and assessment.valid is not False
        and assessment.source.source_type == AssessmentSourceType.HUMAN
    )
