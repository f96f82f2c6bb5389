"""An episode's answer -> a label, in one place, with the run's settings.

The agent never scores: a single-answer mode leaves its answer text, patch mode one text per patch,
and both are read here with the run's `panda_null_as_zero`; patch answers are then voted with the
run's `tie_rule` (patch order stands in for run order: a tie goes to the lowest-numbered patch).
"""

from __future__ import annotations

from pydantic import BaseModel

from giant.core import Item
from giant.eval.answers import extract_label
from giant.eval.scoring_settings import ScoringSettings
from giant.eval.voting import majority_vote
from giant.record import UNPARSEABLE
from giant.record.trajectory import Trajectory

PATCH_VOTE = "patch_vote"  # the extraction method recorded for a vote over patch answers


class Scored(BaseModel):
    label: int | None  # None: no valid answer (scored incorrect)
    method: str  # how the label was found (counted in summary.json)
    detail: str = ""  # why there is no label, in one line
    patch_labels: list[int | None] | None = None  # patch mode: each patch's label, in patch order


def score_trajectory(traj: Trajectory, item: Item, scoring: ScoringSettings) -> Scored:
    """The label of an answered episode: its answer read, or its patch answers read and voted."""
    return score_answers(traj.answer, traj.patch_answers, item, scoring)


def score_answers(
    answer: str | None, patch_answers: list[str | None] | None, item: Item, scoring: ScoringSettings
) -> Scored:
    """The answer text (or, in patch mode, the patch answer texts) read and voted: what an episode
    recorded is all a score needs, so a finished run can be re-scored without its trajectories."""
    null_as_zero = scoring.panda_null_as_zero
    if patch_answers is None:
        found = extract_label(answer or "", item.benchmark, item.options, panda_null_as_zero=null_as_zero)
        return Scored(label=found.label, method=found.method, detail=found.detail)
    labels = [
        None
        if text is None
        else extract_label(text, item.benchmark, item.options, panda_null_as_zero=null_as_zero).label
        for text in patch_answers
    ]
    winner = majority_vote(labels, scoring.tie_rule)
    detail = "" if winner is not None else f"none of the {len(labels)} patch answers gave a valid label"
    return Scored(label=winner, method=PATCH_VOTE, detail=detail, patch_labels=labels)


def outcome_fields(scored: Scored, item: Item) -> dict[str, object]:
    """A scored answer as result-record fields: an answer without a label is `unparseable`."""
    fields: dict[str, object] = {"method": scored.method, "patch_labels": scored.patch_labels}
    if scored.label is None:
        fields.update(status=UNPARSEABLE, reason=f"unparseable answer: {scored.detail or scored.method}")
    else:
        fields.update(label=scored.label, correct=scored.label == item.truth)
    return fields
