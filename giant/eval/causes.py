"""Which item-runs measured the model and which could not: the rule the runner, resume and the
summary share.

The paper scores a model that gives no valid answer as incorrect, and that is a measurement: no
parseable answer within its retries, an early answer refused, the step limit, a refusal. A slide
that is not there, a refused key, an unknown model name, a used-up quota, a server that is down or
hangs, an exception nothing classified (a bug) are not: they are causes (`giant.core.SetupCause`),
and such an item-run is unmeasured: never a table cell, the job incomplete (exit 4). The runner
stops at once on the fatal ones (nothing more can be learned and money may go), stops after a streak
of the others (the circuit breaker), and a rerun retries every item-run that has one unasked.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import get_args

from giant.core import TRANSIENT_CAUSES, SetupCause
from giant.record import ResultRecord
from giant.record.trajectory import Trajectory

SETUP_CAUSES: frozenset[str] = frozenset(get_args(SetupCause))

# Nothing can succeed until the user acts, and every further call is a request that fails the same
# way: the run stops at the first one.
FATAL_CAUSES: frozenset[SetupCause] = frozenset(
    {"key", "model_name", "quota", "flex_unsupported", "image_limit"}
)

# What each cause asks of the user, for the one line that stops a run.
FIXES: dict[str, str] = {
    "key": "check the key in the provider's key variable (provider.api_key_env) and its permissions",
    "model_name": "check provider.model against the models the endpoint serves",
    "quota": "the account's quota or credit is used up: check its billing, then rerun",
    "network": "check the network and provider.base_url",
    "rate_limit": "lower concurrency or set provider.rpm / provider.tpm",
    "server": "the provider's server keeps failing; check its status and rerun later",
    "context": "the requests exceed the model's context: lower agent.max_steps, agent.crop_size or "
    "agent.max_images_in_context",
    "bad_request": "the server rejects the requests; see the reason, then fix the settings it names",
    "flex_capacity": "flex processing kept answering 'resource unavailable': rerun later, raise "
    "provider.flex_retries, or set provider.flex_fallback=standard (those calls cost the standard price)",
    "flex_unsupported": "this model does not take provider.service_tier=flex: set "
    "provider.service_tier=standard or pick a model that flex processing serves",
    "image_limit": "the server takes fewer images per prompt than the agent sends: restart it with "
    "--limit-mm-per-prompt '{\"image\": T}' (vLLM), or lower agent.max_images_in_context",
    "slide_unreadable": "the slide files cannot be opened; check them with scripts/fetch_slides.py",
    "slide_missing": "put the slides under paths.wsi_root (scripts/fetch_slides.py), or pass "
    "skip_missing=true to drop them",
    "timeout": "the server did not answer within agent.item_timeout_s; check that it answers "
    "(provider.base_url), or raise agent.item_timeout_s",
    "bug": "an unexpected error (a bug): its traceback is in the job folder's errors.log; report it",
}

# Statuses that say the slide, not the model, failed (records written before causes were recorded
# carry only these).
_SLIDE_STATUS: dict[str, SetupCause] = {"slide_missing": "slide_missing", "slide_error": "slide_unreadable"}
# A result line whose episode raised (giant.record.RUNNER_ERROR) measured nothing: lines written
# before it carried the cause `bug` are read as having it.
_RECORD_STATUS: dict[str, SetupCause] = {**_SLIDE_STATUS, "runner_error": "bug"}


def trajectory_cause(trajectory: Trajectory) -> SetupCause | None:
    """The setup cause of an episode's ending, or None when it measured the model.

    A fatal provider error names its own cause. A streak of failed calls (retries_exhausted) is a setup
    failure only when every call of the final streak failed for a transient cause (rate limit, 5xx,
    connection): one unparseable or refused reply in it makes it the model's."""
    if trajectory.status in _SLIDE_STATUS:
        return _SLIDE_STATUS[trajectory.status]
    if trajectory.status == "context_exceeded":
        return "context"
    if trajectory.status == "timeout" and any(call.error_kind == "timeout" for call in trajectory.calls):
        return "timeout"  # cut while the server had not answered a call: a hang, not the model's pace
    if trajectory.status == "provider_error":
        failed = [call for call in trajectory.calls if call.error_kind is not None]
        return failed[-1].cause if failed else None
    if trajectory.status == "retries_exhausted":
        streak = []
        for call in reversed(trajectory.calls):
            if call.error_kind is None:
                break
            streak.append(call)
        if streak and all(call.cause in TRANSIENT_CAUSES for call in streak):
            return streak[0].cause
    return None


def record_cause(record: ResultRecord) -> SetupCause | None:
    """A result line's setup cause (older lines: from the status alone)."""
    if record.cause is not None:
        return record.cause
    return _RECORD_STATUS.get(record.status)


@dataclass
class Halt:
    """Why the runner stopped starting items and calls (empty while it has not); set from the call
    limits on a fatal cause (giant.eval.limits) and by the circuit breaker."""

    reason: str = ""
    cause: str | None = None

    def trip(self, reason: str, cause: str | None) -> None:
        if not self.reason:  # the first reason is the one to fix
            self.reason, self.cause = reason, cause

    def __bool__(self) -> bool:
        return bool(self.reason)


def fatal_reason(cause: str, error: str) -> str:
    """The one line for a run stopped by a fatal provider answer: what happened and what to fix."""
    return f"stopped at the first {cause} error ({error}); {FIXES[cause]}"


@dataclass
class CircuitBreaker:
    """Stops a run whose item-runs keep failing for reasons outside the model.

    `after` item-runs in a row with a setup cause (a missing slide excepted: that is planned and
    reported before the run) trip it, whether they are the job's first or come mid-run after the
    server went down; any item-run that measured the model resets the streak."""

    after: int
    streak: list[tuple[str, str]] = field(default_factory=list)  # (cause, reason) of each

    def observe(self, record: ResultRecord, halt: Halt) -> None:
        cause = record_cause(record)
        if cause is None:
            self.streak.clear()
            return
        if cause == "slide_missing":
            return
        self.streak.append((cause, record.reason))
        if len(self.streak) >= self.after:
            counts = Counter(c for c, _ in self.streak)
            common, _ = counts.most_common(1)[0]
            example = next(reason for c, reason in self.streak if c == common)
            halt.trip(
                f"circuit breaker: the last {len(self.streak)} item-runs failed for reasons outside the "
                f"model ({', '.join(f'{n} {c}' for c, n in counts.most_common())}; e.g. {example[:200]}); "
                f"{FIXES.get(common, 'fix the cause')}, then rerun to resume",
                common,
            )
