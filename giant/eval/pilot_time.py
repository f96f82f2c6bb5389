"""The pilot's clock: the campaign's wall time from what a pilot of the same run key measured.

The dry run's constant-based range (giant.eval.timing) guesses 5-20 s a call; a pilot knows. From its
summary.json `pacing` record (giant.record.summary.Pacing) and its results it takes:
- an item-run's own time: each finished item-run's seconds less its share of the seconds its calls
  waited in the pacer (the waits are the limits', which the campaign meets again at its own scale);
  that is its calls' latency plus giant's own time per step (crops, the agent);
- the calls per item-run and the units a call spends (tokens per call, as the replies counted them);
- the per-minute limits in force during the pilot (settings, or the headers it read), or the
  campaign's own settings where lower: the lower limit wins, as in the pacer;
- the seconds its lanes were paused by 429s: a campaign meets them once, while its pacer learns the limits.

A campaign's first request goes alone (giant.llm.pacer): when a limit is known (a setting, or one
the pilot learned from a header or a 429, which the campaign's first reply tells it again) one call's
time is lost; when none is, the window doubles each call's time until every lane sends,
ceil(log2(lanes)) calls' time, the last lane's first call starting that late.

The campaign's wall time is then the longer of the item-runs spread over the lanes,
ceil(item-runs / lanes) x an item-run's own time, and, for each limit, its units (answered requests,
their tokens) at its rate less the one second's worth a server lets through at once, plus one call's
latency (the bound of giant.eval.pacing, for the whole campaign); plus the pilot's pauses and the
slow start. Its 95%
interval comes from a bootstrap over the pilot's finished item-runs (their own times and their calls).
Item-runs that ended on a setup cause (a rate limit, a server down) or are still to be run are not
finished episodes: their seconds say nothing about a finished item-run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from giant.eval.bootstrap import bootstrap_mean
from giant.eval.timing import duration
from giant.llm.pacer import BURST_S, PROBE_WAIT_S
from giant.record.results import ResultRecord
from giant.record.summary import Pacing

REPLICATES = 1000


class PilotTime(BaseModel):
    episodes: int  # finished item-runs of the pilot the forecast rests on
    item_runs: int  # of the campaign
    concurrency: int
    calls_per_item_run: float  # mean over the finished episodes
    item_run_s: float  # an item-run's own time (its calls and giant's own), the pacer's waits excluded
    latency_s: float  # mean seconds of one call
    own_s_per_call: float  # giant's own time per call: an item-run's own time over its calls, less latency
    limits: dict[str, float]  # per minute, by kind, that the forecast paces by
    paused_s: float  # the pilot's 429 pauses, counted once
    start_s: float  # the pacer's slow start: the first request alone, then the window while no limit is known
    requests: int  # the pilot's requests, 429s included
    requests_429: int
    forecast_s: float
    low_s: float  # 2.5th percentile of the bootstrap
    high_s: float  # 97.5th
    set_by: str  # "latency" (the lanes) or the limit's kind that binds

    def render(self) -> list[str]:
        by = (
            f"the {self.set_by} limit of {self.limits[self.set_by]:,.0f}/min"
            if self.set_by in self.limits
            else f"the calls' latency over {min(self.concurrency, self.item_runs)} lanes"
        )
        return [
            f"pilot time forecast for {self.item_runs} item-runs at concurrency {self.concurrency}, at the "
            f"pilot's tier: {duration(self.forecast_s)} (95% interval {duration(self.low_s)} - "
            f"{duration(self.high_s)}), set by {by}",
            f"  from {self.episodes} finished episodes: {self.calls_per_item_run:.1f} calls per item-run, "
            f"{self.latency_s:.2f} s per call, giant's own {self.own_s_per_call:.2f} s per call, "
            f"{self.requests_429} of {self.requests} requests answered 429, {self.paused_s:.0f} s paused; "
            f"{self.start_s:.0f} s of slow start",
        ]


def campaign_s(  # noqa: PLR0913  the campaign's size and each measured figure, keyword-only
    *,
    item_runs: int,
    concurrency: int,
    calls_per_item_run: float,
    item_run_s: float,
    latency_s: float,
    units_per_call: Mapping[str, float],
    limits: Mapping[str, float],
    paused_s: float = 0.0,
    start_s: float = 0.0,
) -> tuple[float, str]:
    """The campaign's wall time and what sets it ("latency" or a limit's kind)."""
    lanes = max(1, min(concurrency, item_runs))
    longest, set_by = math.ceil(item_runs / lanes) * item_run_s, "latency"
    calls = item_runs * calls_per_item_run
    for kind, per_minute in limits.items():
        per_s = per_minute / 60.0
        units = calls * (1.0 if kind == "requests" else units_per_call.get(kind, 0.0))
        rated = max(0.0, units - per_s * BURST_S) / per_s + latency_s
        if units and rated > longest:
            longest, set_by = rated, kind
    return longest + paused_s + start_s, set_by


def slow_start_s(*, call_s: float, lanes: int, pilot_knew: bool, settings: bool) -> float:
    """The campaign's seconds lost to the pacer's slow start (see the module's docstring)."""
    rounds = 1 if pilot_knew or settings else math.ceil(math.log2(max(1, lanes)))
    return rounds * min(call_s, PROBE_WAIT_S)


def campaign_limits(pilot: Mapping[str, float], settings: Mapping[str, float | None]) -> dict[str, float]:
    """The limits the campaign meets: the pilot's, and the campaign's settings where lower (or where
    the pilot knew none)."""
    limits = dict(pilot)
    for kind, value in settings.items():
        if value:
            limits[kind] = min(value, limits.get(kind, value))
    return limits


def pilot_time(
    records: Sequence[ResultRecord],
    finished: Sequence[ResultRecord],
    pacing: Pacing,
    *,
    item_runs: int,
    concurrency: int,
    settings: Mapping[str, float | None],
    seed: int = 0,
) -> PilotTime | None:
    """The forecast from the pilot's `records` (every item-run of the invocation `pacing` describes),
    of which `finished` are the finished episodes; None when none finished or no call was answered."""
    if not finished or not pacing.answered:
        return None
    all_calls = sum(record.calls for record in records) or 1
    wait_per_call = pacing.waited_s / all_calls
    own = [max(pacing.latency_s, record.seconds - record.calls * wait_per_call) for record in finished]
    calls = [float(record.calls) for record in finished]
    own_mean = bootstrap_mean(own, replicates=REPLICATES, seed=seed)
    calls_mean = bootstrap_mean(calls, replicates=REPLICATES, seed=seed)
    units = {kind: used / pacing.answered for kind, used in pacing.used.items()}
    limits = campaign_limits(pacing.limits, settings)

    lanes = max(1, min(concurrency, item_runs))

    def start(call_count: float, item_run_s: float) -> float:
        return slow_start_s(
            call_s=item_run_s / call_count if call_count else pacing.latency_s,
            lanes=lanes,
            pilot_knew=bool(pacing.limits),
            settings=any(settings.values()),
        )

    def forecast(call_count: float, item_run_s: float) -> tuple[float, str]:
        return campaign_s(
            item_runs=item_runs,
            concurrency=concurrency,
            calls_per_item_run=call_count,
            item_run_s=item_run_s,
            latency_s=pacing.latency_s,
            units_per_call=units,
            limits=limits,
            paused_s=pacing.paused_s,
            start_s=start(call_count, item_run_s),
        )

    point, set_by = forecast(calls_mean.point, own_mean.point)
    per_call = own_mean.point / calls_mean.point if calls_mean.point else 0.0
    return PilotTime(
        episodes=len(finished),
        item_runs=item_runs,
        concurrency=concurrency,
        calls_per_item_run=calls_mean.point,
        item_run_s=own_mean.point,
        latency_s=pacing.latency_s,
        own_s_per_call=max(0.0, per_call - pacing.latency_s),
        limits=limits,
        paused_s=pacing.paused_s,
        start_s=start(calls_mean.point, own_mean.point),
        requests=pacing.requests,
        requests_429=pacing.requests_429,
        forecast_s=point,
        low_s=forecast(calls_mean.ci_low, own_mean.ci_low)[0],
        high_s=forecast(calls_mean.ci_high, own_mean.ci_high)[0],
        set_by=set_by,
    )
