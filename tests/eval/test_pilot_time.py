"""The pilot's forecast of a campaign's wall time (giant.eval.pilot_time): its arithmetic on injected
figures, and a real pilot's recorded figures reaching the dry run's forecast."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from giant.eval.dryrun import DryRunReport, dry_run, sweep_time_line
from giant.eval.pilot_time import campaign_s, pilot_time, slow_start_s
from giant.eval.timing import duration
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.llm.pacer import BURST_S, PROBE_WAIT_S
from giant.llm.pricing import Pricing, Rates
from giant.record import RESULTS_FILE, ResultRecord, ResultsWriter, read_results
from giant.record.summary import Pacing
from tests.llm.ratelimit_server import RateLimitedAPI, serving

from .runner_fixtures import AGENT, SLIDES, evaluate, make_items


def _record(n: int, calls: int, seconds: float, **fields: object) -> ResultRecord:
    base = {"key": f"demo/{n}", "benchmark": "demo", "run_index": 0, "seed": 0, "truth": 0}
    return ResultRecord.model_validate(
        base | {"status": "answered", "calls": calls, "seconds": seconds} | fields
    )


def _pacing(**fields: object) -> Pacing:
    base = {"requests": 40, "requests_429": 2, "paused_s": 3.0, "requests_per_min": 0.0}
    base |= {"tokens_per_min": 0.0, "makespan_s": 100.0, "bound_s": 90.0, "answered": 38}
    return Pacing.model_validate(base | fields)


def test_the_longer_of_the_lanes_and_each_limit_sets_the_campaigns_time() -> None:
    lanes_only, by = campaign_s(
        item_runs=20,
        concurrency=8,
        calls_per_item_run=5,
        item_run_s=12.0,
        latency_s=2.0,
        units_per_call={},
        limits={},
    )
    assert by == "latency" and lanes_only == math.ceil(20 / 8) * 12.0
    limited, by = campaign_s(
        item_runs=20,
        concurrency=8,
        calls_per_item_run=5,
        item_run_s=12.0,
        latency_s=2.0,
        units_per_call={"tokens": 3000.0},
        limits={"requests": 600, "tokens": 60_000},
        paused_s=4.0,
        start_s=1.5,
    )
    tokens_per_s = 60_000 / 60
    expected = (20 * 5 * 3000 - tokens_per_s * BURST_S) / tokens_per_s + 2.0
    assert by == "tokens" and limited == pytest.approx(expected + 4.0 + 1.5)
    assert expected > 20 * 5 / 10 + 2.0  # the requests limit binds less


def test_the_slow_start_costs_a_call_per_doubling_or_one_call_when_a_limit_is_known_or_set() -> None:
    assert slow_start_s(call_s=1.5, lanes=8, pilot_knew=False, settings=False) == 3 * 1.5
    assert slow_start_s(call_s=1.5, lanes=8, pilot_knew=True, settings=False) == 1.5
    assert slow_start_s(call_s=1.5, lanes=8, pilot_knew=False, settings=True) == 1.5
    assert slow_start_s(call_s=100.0, lanes=2, pilot_knew=False, settings=False) == PROBE_WAIT_S


def test_the_forecast_takes_the_pacers_waits_out_of_the_finished_episodes() -> None:
    records = [
        _record(0, 4, 10.0),
        _record(1, 4, 14.0),
        _record(2, 2, 3.0, status="retries_exhausted", cause="rate_limit"),
    ]
    finished = records[:2]
    waited, latency = 5.0, 2.0
    pacing = _pacing(latency_s=latency, waited_s=waited, limits={"requests": 30.0}, used={"tokens": 38_000.0})
    forecast = pilot_time(records, finished, pacing, item_runs=100, concurrency=10, settings={"requests": 60})
    assert forecast is not None and forecast.episodes == 2
    wait_per_call = waited / 10  # every record's calls share the waits
    own = ((10.0 - 4 * wait_per_call) + (14.0 - 4 * wait_per_call)) / 2
    assert forecast.item_run_s == pytest.approx(own)
    assert forecast.own_s_per_call == pytest.approx(own / 4 - latency)
    assert forecast.limits == {"requests": 30.0}  # the pilot's header limit is lower than the setting
    rated = (100 * 4 - 0.5 * BURST_S) / 0.5 + latency  # 30 per minute
    assert forecast.set_by == "requests"
    assert forecast.forecast_s == pytest.approx(rated + pacing.paused_s + own / 4)  # the first call alone
    assert forecast.low_s <= forecast.forecast_s <= forecast.high_s
    lower = pilot_time(records, finished, pacing, item_runs=100, concurrency=10, settings={"requests": 15})
    assert lower is not None and lower.limits == {"requests": 15.0} and lower.forecast_s > forecast.forecast_s
    assert pilot_time(records, [], pacing, item_runs=100, concurrency=10, settings={}) is None


def test_a_pilots_recorded_figures_reach_the_dry_runs_forecast(
    wsi_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback-0123456789")
    pilot = tmp_path / "pilot"
    api = RateLimitedAPI("openai", rpm=600, latency_s=0.05, answer_at=3)
    with serving(api) as url:
        provider = build_provider(provider_settings("openai", model="gpt-5", base_url=f"{url}/v1"))
        summary = asyncio.run(evaluate(make_items(4, SLIDES), wsi_root, provider, pilot, concurrency=4))
    assert summary.pacing is not None and summary.pacing.answered == api.answered
    records = read_results(pilot / RESULTS_FILE)
    with ResultsWriter(pilot / RESULTS_FILE) as writer:  # a failed episode is no finished one
        writer.append(_record(99, 1, 0.01, status="retries_exhausted", cause="rate_limit"))
    report = dry_run(
        make_items(40, SLIDES),
        wsi_root=wsi_root,
        agent=AGENT,
        provider=provider_settings("openai", model="gpt-5"),
        pricing=Pricing({"gpt-5": Rates(input=1.25, cached_input=0.125, cache_write=1.25, output=10.0)}),
        runs_per_item=1,
        pilot=pilot,
        concurrency=8,
    )
    assert report.pilot is not None and report.pilot.time is not None
    time = report.pilot.time
    assert time.episodes == len(records) == 4 and time.item_runs == 40 and time.concurrency == 8
    assert time.calls_per_item_run == pytest.approx(sum(r.calls for r in records) / 4)
    assert time.latency_s == pytest.approx(summary.pacing.latency_s) and time.latency_s >= 0.05
    assert time.limits == {"requests": 600.0}  # from the headers the pilot read
    assert time.requests == api.answered + api.refused
    assert "pilot time forecast for 40 item-runs at concurrency 8" in report.render()


def test_a_dry_run_sweep_adds_up_its_cells_pilot_forecasts() -> None:
    records = [_record(0, 4, 10.0), _record(1, 4, 14.0)]
    pacing = _pacing(latency_s=2.0, waited_s=0.0, limits={"requests": 60.0})
    times = [pilot_time(records, records, pacing, item_runs=n, concurrency=8, settings={}) for n in (80, 800)]
    cells = [cast(DryRunReport, SimpleNamespace(time=None, pilot=SimpleNamespace(time=t))) for t in times]
    line = sweep_time_line(cells)
    total = sum(t.forecast_s for t in times if t is not None)
    assert f"from the pilots of 2 cell(s): {duration(total)} (" in line
