"""Why each item-run ended as it did: a status says "retries_exhausted", the taxonomy says whether the
model drew boxes off the slide, wrote text no decoder could read, or refused. Everything is derived
from what the trajectory already records (each call's error kind, its crop steps against the regions
read, the corrective messages) and the record's extraction method, so old job folders get a report too.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from giant.agent.config import NavigationConfig
from giant.agent.loop import crop_issues
from giant.agent.modes import find_mode
from giant.core import Box
from giant.llm.types import CropAction
from giant.record import SKIPPED, UNPARSEABLE
from giant.record.trajectory import Call, Trajectory
from giant.report.facts import ItemRun

# Causes in the order the page lists them; the text says what the model (or the run) did.
CAUSES: dict[str, str] = {
    "answered": "answered with a readable label after zooming",
    "answered_without_zooming": "answered with a readable label without one crop, though crops were offered",
    "null_grade": "answered with a null grade (scored as grade 0 when panda_null_as_zero is on)",
    "unparseable_answer": "answered, but no label could be read from the answer text",
    "invalid_boxes": "failed calls in a row ending in boxes outside the slide",
    "unparseable_reply": "failed calls in a row ending in a reply that was not a valid step",
    "refusal": "failed calls in a row ending in a refusal",
    "transient_errors": "failed calls in a row ending in transient API errors",
    "step_limit": "kept cropping once the answer was due, past every corrective message",
    "early_answer_rejected": "answered before step T (paper mode), past every corrective message",
    "budget_exceeded": "stopped by the item or run budget",
    "timeout": "cut by the item timeout",
    "provider_error": "a fatal provider error",
    "context_exceeded": "the conversation outgrew the model's context window",
    "slide_problem": "the slide was missing or unreadable",
    "other": "another ending (see the item's reason)",
}
# Causes that are not failures: the item has a label (a null grade read as 0 is counted apart).
LABELLED = frozenset({"answered", "answered_without_zooming"})
_ERROR_CAUSES = {"parse": "unparseable_reply", "refusal": "refusal", "transient": "transient_errors"}
_STATUS_CAUSES = {
    "step_limit_exceeded": "step_limit",
    "early_answer_rejected": "early_answer_rejected",
    "budget_exceeded": "budget_exceeded",
    "timeout": "timeout",
    "provider_error": "provider_error",
    "context_exceeded": "context_exceeded",
    "slide_error": "slide_problem",
    "slide_missing": "slide_problem",
    SKIPPED: "slide_problem",
}
# Call-level events, counted over every call of the job.
EVENTS: dict[str, str] = {
    "invalid_box": "crop boxes outside the slide (rejected with feedback)",
    "parse": "replies that were not a valid step",
    "refusal": "refusals",
    "transient": "transient API errors (after the SDK's own retries)",
    "timeout": "calls cut by the item timeout",
    "fatal": "fatal provider errors",
    "decoded_with_note": "replies usable only after passing over chatter or repeats",
    "correction": "corrective messages after a crop when the answer was due (or an early answer)",
}


@dataclass(frozen=True)
class FailedCall:
    """One call that produced nothing the agent could execute, for the list under the taxonomy."""

    run: ItemRun
    call: Call
    kind: str  # an EVENTS key (or an error kind it does not list)
    detail: str
    count: int = 1  # events in the call: a turn can hold several rejected boxes


def invalid_boxes(traj: Trajectory, call: Call) -> list[Box]:
    """The call's crop boxes that break the slide's bounds and were never read: with strict crops any
    overhang, otherwise a box that starts outside the slide (clamping leaves nothing to read)."""
    read = {region.requested for region in traj.regions if region.call_index == call.index}
    boxes = []
    for step in call.steps:
        action = step.action
        if isinstance(action, CropAction):
            box = Box(x=action.x, y=action.y, w=action.width, h=action.height)
            if box not in read and crop_issues(box, traj.slide_width, traj.slide_height):
                boxes.append(box)
    return boxes


def may_zoom(traj: Trajectory) -> bool:
    """The mode offered crops: only then is an answer without one a finding."""
    mode = find_mode(traj.mode)
    return mode is not None and issubclass(mode.settings, NavigationConfig) and traj.max_steps > 1


def cause(run: ItemRun) -> str:
    """The one cause of an item-run (a CAUSES key)."""
    record, traj = run.record, run.trajectory
    if record.method is not None and "_null" in record.method:
        return "null_grade"
    if record.status == UNPARSEABLE:
        return "unparseable_answer"
    if record.label is not None:
        zoomed = record.crops > 0 or traj is None or not may_zoom(traj)
        return "answered" if zoomed else "answered_without_zooming"
    if record.status == "retries_exhausted" and traj is not None and traj.calls:
        last = traj.calls[-1]
        if last.error_kind is not None:
            return _ERROR_CAUSES.get(last.error_kind, "other")
        return "invalid_boxes" if invalid_boxes(traj, last) else "other"
    return _STATUS_CAUSES.get(record.status, "other")


def failed_calls(runs: list[ItemRun]) -> list[FailedCall]:
    """Every call that failed or held a rejected box, in item order."""
    found = []
    for run in runs:
        traj = run.trajectory
        if traj is None:
            continue
        for call in traj.calls:
            if call.error_kind is not None:
                found.append(FailedCall(run, call, call.error_kind, call.error or ""))
            boxes = invalid_boxes(traj, call)
            if boxes:
                text = (
                    "; ".join(str(box) for box in boxes)
                    + f" on a {traj.slide_width}x{traj.slide_height} slide"
                )
                found.append(FailedCall(run, call, "invalid_box", text, count=len(boxes)))
    return found


def event_counts(runs: list[ItemRun]) -> Counter[str]:
    """Call-level events over the job (EVENTS keys); an error kind outside EVENTS keeps its own name."""
    counts: Counter[str] = Counter()
    for failed in failed_calls(runs):
        counts[failed.kind] += failed.count
    for traj in (run.trajectory for run in runs):
        if traj is None:
            continue
        counts["decoded_with_note"] += sum(call.decode_note is not None for call in traj.calls)
        counts["correction"] += traj.corrections
    return counts
