"""An episode's answer -> a label, in one place, with the run's settings.

The agent never scores: a single-answer mode leaves its answer text, patch mode one text per patch,
and both are read here with the run's `panda_null_as_zero`; patch answers are then voted with the
run's `tie_rule` (patch order stands in for run order: a tie goes to the lowest-numbered patch).
"""

from __future__ import annotations

from pydantic import BaseModel

from giant.agent.trajectory import Trajectory
from giant.core import Item
from giant.eval.answers import extract_label
from giant.eval.voting import majority_vote

PATCH_VOTE = "patch_vote"  # the extraction method recorded for a vote over patch answers


class Scored(BaseModel):
    label: int | None  # None: no valid answer (scored incorrect)
    method: str  # how the label was found (counted in summary.json)
    detail: str = ""  # why there is no label, in one line
    patch_labels: list[int | None] | None = None  # patch mode: each patch's label, in patch order


def score_trajectory(traj: Trajectory, item: Item, *, tie_rule: str, panda_null_as_zero: bool) -> Scored:
    """The label of an answered episode: its answer read, or its patch answers read and voted."""
    if traj.patch_answers is None:
        found = extract_label(
            traj.answer or "", item.benchmark, item.options, panda_null_as_zero=panda_null_as_zero
        )
        return Scored(label=found.label, method=found.method, detail=found.detail)
    labels = [
        None
        if text is None
        else extract_label(text, item.benchmark, item.options, panda_null_as_zero=panda_null_as_zero).label
        for text in traj.patch_answers
    ]
    winner = majority_vote(labels, tie_rule)
    detail = "" if winner is not None else f"none of the {len(labels)} patch answers gave a valid label"
    return Scored(label=winner, method=PATCH_VOTE, detail=detail, patch_labels=labels)
