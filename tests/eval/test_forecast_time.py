"""The forecast's clock (giant.eval.timing, giant.eval.forecast, giant.eval.dryrun): an offline provider
is given no call time, a pilot's rate-limited failures are not finished episodes, and a dry-run sweep
prints its whole time."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

from giant.eval.dryrun import DryRunReport, sweep_time_line
from giant.eval.forecast import pilot_forecast
from giant.eval.timing import duration, estimate_time
from giant.llm.config import provider_settings
from giant.record import RESULTS_FILE, ResultRecord, ResultsWriter


def test_an_offline_provider_forecasts_no_call_time(tmp_path: Path) -> None:
    script = tmp_path / "steps.jsonl"
    script.write_text('{"type": "answer", "text": "1"}\n')
    for name in ("random", "scripted"):
        settings = {"script": str(script)} if name == "scripted" else {}
        estimate = estimate_time(
            item_runs=934,
            calls_per_item_run=20,
            input_tokens=0,
            concurrency=8,
            provider=provider_settings(name, **settings),
            tiers=[],
        )
        assert [(t.tier, t.low_s, t.high_s) for t in estimate.tiers] == [("offline", 0.0, 0.0)]


def test_a_pilots_rate_limited_failures_are_not_finished_episodes(tmp_path: Path) -> None:
    def record(key: str, dollars: float, **fields: object) -> ResultRecord:
        return ResultRecord.model_validate(
            {"key": key, "benchmark": "demo", "run_index": 0, "seed": 0, "truth": 0, "dollars": dollars}
            | {"status": "answered"}
            | fields
        )

    pilot = tmp_path / "pilot"
    with ResultsWriter(pilot / RESULTS_FILE) as writer:
        writer.append(record("demo/0", 0.20))
        writer.append(record("demo/1", 0.10))
        writer.append(record("demo/2", 0.0003, status="retries_exhausted", cause="rate_limit"))
    forecast = pilot_forecast(pilot, {"demo": 10})
    assert forecast is not None
    assert forecast.tasks["demo"].episodes == 2
    assert abs(forecast.tasks["demo"].mean_usd - 0.15) < 1e-9


def test_a_dry_run_sweep_prints_its_whole_time_per_tier() -> None:
    gpt5 = provider_settings("openai", model="gpt-5")

    def cell(item_runs: int) -> DryRunReport:
        time = estimate_time(
            item_runs=item_runs,
            calls_per_item_run=20,
            input_tokens=0,
            concurrency=8,
            provider=gpt5,
            tiers=["standard", "flex"],
        )
        return cast(DryRunReport, SimpleNamespace(time=time, pilot=None))

    cells = [cell(80), cell(160)]
    line = sweep_time_line(cells)
    total = {tier.tier: 0.0 for tier in cells[0].time.tiers}  # type: ignore[union-attr]
    for report in cells:
        for tier in report.time.tiers:  # type: ignore[union-attr]
            total[tier.tier] += tier.low_s
    assert line.startswith("the whole sweep's wall time, cells one after another: standard ")
    assert (
        f"standard {duration(total['standard'])} - " in line and f"flex {duration(total['flex'])} - " in line
    )


def test_patch_vote_calls_are_timed_as_they_run_side_by_side() -> None:
    gpt5 = provider_settings("openai", model="gpt-5")

    def tiers(concurrent: bool) -> dict[str, tuple[float, float]]:
        estimate = estimate_time(
            item_runs=80,
            calls_per_item_run=30,
            input_tokens=0,
            concurrency=8,
            provider=gpt5,
            tiers=["standard", "batch"],
            concurrent_calls=concurrent,
        )
        return {t.tier: (t.low_s, t.high_s) for t in estimate.tiers}

    in_turn, side_by_side = tiers(False), tiers(True)
    assert side_by_side["standard"][0] == in_turn["standard"][0] / 30  # one wait per item-run, not 30
    assert side_by_side["batch"][0] == in_turn["batch"][0] / 30  # one round, not 30
    rpm = provider_settings("openai", model="gpt-5", rpm=60)
    floor = estimate_time(
        item_runs=80,
        calls_per_item_run=30,
        input_tokens=0,
        concurrency=8,
        provider=rpm,
        tiers=["standard"],
        concurrent_calls=True,
    ).tiers[0]
    assert floor.low_s == 80 * 30  # every call still counts against the rate limit: 2,400 at one a second
