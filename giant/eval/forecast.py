"""The pilot forecast: what the full run will cost, from what the finished episodes of the same run
key actually cost.

The dry run's low / expected / high figures model tokens and caching; once a pilot (say limit=10) has
run, its per-item dollars are a better guide, since they include the real number of steps, the real
answer lengths and the cache the provider really gave. Per task: the mean cost of a finished
item-run times the item-runs the full run needs, with a bootstrap interval over the pilot's
item-runs (giant/eval/bootstrap.py). Item-runs still to be run (skipped, stopped by a budget), those
that ended on a setup cause (a rate limit, a server down: giant.eval.causes) and those without a
price are left out: their dollars say nothing about a finished item-run. The same finished item-runs
and the pilot's `pacing` record forecast the campaign's wall time (giant.eval.pilot_time).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ValidationError

from giant.eval.bootstrap import bootstrap_mean
from giant.eval.causes import record_cause
from giant.eval.pilot_time import PilotTime, pilot_time
from giant.eval.resume import UNFINISHED
from giant.record import JobLayout, latest_by_slot, read_results, read_summary
from giant.record.results import ResultRecord

REPLICATES = 1000


class TaskForecast(BaseModel):
    episodes: int  # finished, priced item-runs of the pilot this forecast rests on
    mean_usd: float  # per item-run
    item_runs: int  # of the full run
    forecast_usd: float
    ci_low_usd: float  # 2.5th percentile of the bootstrap, times item_runs
    ci_high_usd: float  # 97.5th percentile


class PilotForecast(BaseModel):
    source: str  # the pilot's job folder
    tasks: dict[str, TaskForecast]
    time: PilotTime | None = None  # the campaign's wall time; None without a pilot's pacing record

    @property
    def episodes(self) -> int:
        return sum(task.episodes for task in self.tasks.values())

    def render(self) -> list[str]:
        lines = (
            [f"pilot forecast from {self.episodes} finished episodes in {self.source}:"] if self.tasks else []
        )
        lines += [
            f"  {name}: ${t.forecast_usd:,.2f} (95% interval ${t.ci_low_usd:,.2f}-${t.ci_high_usd:,.2f}) "
            f"= ${t.mean_usd:,.4f} per item-run x {t.item_runs}, based on {t.episodes} episodes"
            for name, t in sorted(self.tasks.items())
        ]
        return lines + (self.time.render() if self.time is not None else [])


def pilot_forecast(
    pilot: Path,
    item_runs: dict[str, int],
    *,
    seed: int = 0,
    concurrency: int = 1,
    limits: Mapping[str, float | None] | None = None,
) -> PilotForecast | None:
    """Per task of `item_runs` (task -> item-runs of the full run), and the whole run's wall time at
    `concurrency` lanes under the pilot's limits or `limits` (kind -> per minute: the campaign's
    settings) where lower; None when the pilot folder has no finished item-run of any of these tasks
    that is priced or timed."""
    costs: dict[str, list[float]] = defaultdict(list)
    records = list(latest_by_slot(read_results(JobLayout(pilot).results)).values())
    finished = [
        r
        for r in records
        if r.benchmark in item_runs and r.status not in UNFINISHED and record_cause(r) is None
    ]
    for record in finished:
        if record.dollars is not None:
            costs[record.benchmark].append(record.dollars)
    tasks = {}
    for name, values in costs.items():
        interval = bootstrap_mean(values, replicates=REPLICATES, seed=seed)
        n = item_runs[name]
        tasks[name] = TaskForecast(
            episodes=len(values),
            mean_usd=interval.point,
            item_runs=n,
            forecast_usd=interval.point * n,
            ci_low_usd=interval.ci_low * n,
            ci_high_usd=interval.ci_high * n,
        )
    time = _time(pilot, records, finished, sum(item_runs.values()), concurrency, limits or {}, seed)
    return PilotForecast(source=str(pilot), tasks=tasks, time=time) if tasks or time else None


def _time(
    pilot: Path,
    records: list[ResultRecord],
    finished: list[ResultRecord],
    item_runs: int,
    concurrency: int,
    limits: Mapping[str, float | None],
    seed: int,
) -> PilotTime | None:
    """The wall-time forecast, None when the pilot left no summary with a pacing record (an offline
    provider, a run replayed from the ledger, an older or interrupted pilot)."""
    try:
        pacing = read_summary(pilot).pacing
    except (OSError, ValidationError):
        return None
    if pacing is None:
        return None
    return pilot_time(
        records, finished, pacing, item_runs=item_runs, concurrency=concurrency, settings=limits, seed=seed
    )
