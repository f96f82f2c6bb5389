"""summary.json's `pacing`: what the provider's rate limits did to a run, from its pacer (giant.llm.pacer).

The bound is what the run could not have beaten: each known limit's units (answered requests, their
tokens) at its per-minute rate, less the one second's worth a server lets through at once, plus one
call's latency; or the calls' latencies spread over the lanes. The longer of the two is the bound,
and the makespan over it says how much the limits (or giant) cost beyond it.
"""

from __future__ import annotations

from giant.llm.pacer import BURST_S, Pacer
from giant.record.summary import Pacing


def pacer_of(provider: object) -> Pacer | None:
    """The pacer the provider's calls went through; None for a provider that sends nothing."""
    runtime = getattr(provider, "runtime", None)
    return getattr(runtime, "pacer_used", None)


def bound_s(pacer: Pacer, lanes: int) -> float:
    stats = pacer.stats
    if not stats.answered:
        return 0.0
    latency = stats.latency_s / stats.answered
    serial = stats.latency_s / max(1, lanes)
    rated = 0.0
    for kind, per_minute in pacer.limits().items():
        units = float(stats.answered) if kind == "requests" else stats.used.get(kind, 0.0)
        per_s = per_minute / 60.0
        rated = max(rated, max(0.0, units - per_s * BURST_S) / per_s + latency)
    return max(rated, serial)


def pacing(provider: object, *, wall_s: float, lanes: int) -> Pacing | None:
    """The run's pacing record, or None when no call was paced (offline, all replayed)."""
    pacer = pacer_of(provider)
    if pacer is None or not pacer.stats.requests:
        return None
    stats, minutes = pacer.stats, wall_s / 60.0
    return Pacing(
        requests=stats.requests,
        requests_429=stats.throttled,
        paused_s=round(stats.paused_s, 3),
        requests_per_min=stats.answered / minutes if minutes else 0.0,
        tokens_per_min=stats.tokens / minutes if minutes else 0.0,
        makespan_s=wall_s,
        bound_s=bound_s(pacer, lanes),
        limits=pacer.limits(),
        answered=stats.answered,
        latency_s=stats.latency_s / stats.answered if stats.answered else 0.0,
        waited_s=round(stats.waited_s, 3),
        used=dict(stats.used),
    )
