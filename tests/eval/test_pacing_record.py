"""A job records what the provider's rate limits did to it (summary.json's `pacing`, its MLflow metrics),
and rate-limited item-runs never trip the circuit breaker (giant.eval.causes, giant.eval.pacing).

The runner runs in-process against the loopback API of tests/llm/ratelimit_server.py through the real
openai SDK; the breaker test uses the Refusing double of test_setup_failures.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.record import RESULTS_FILE, read_results
from giant.record import names as n
from giant.record.logged import logged_values
from giant.record.summary import Pacing
from giant.report.render import _pacing as render_pacing
from tests.llm.ratelimit_server import RateLimitedAPI, serving

from .runner_fixtures import SLIDES, evaluate, make_items
from .test_setup_failures import Refusing


def test_a_job_records_its_pacing(wsi_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback-0123456789")
    api = RateLimitedAPI("openai", rpm=600, latency_s=0.05, answer_at=3)
    with serving(api) as url:
        provider = build_provider(provider_settings("openai", model="gpt-5", base_url=f"{url}/v1"))
        items = make_items(4, SLIDES)
        summary = asyncio.run(evaluate(items, wsi_root, provider, tmp_path, concurrency=4))
    pacing = summary.pacing
    assert pacing is not None and summary.complete
    assert pacing.requests == api.answered + api.refused and pacing.requests_429 == api.refused
    assert pacing.limits == {"requests": 600.0}  # read from the server's headers: nothing was set
    assert pacing.bound_s > 0 and pacing.makespan_s == summary.totals.wall_s
    assert pacing.requests_per_min == pytest.approx(api.answered / (summary.totals.wall_s / 60))
    logged = {metric.name for metric in logged_values(summary)}
    assert {n.REQUESTS_429_METRIC, n.EFFECTIVE_RPM_METRIC, n.MAKESPAN_BOUND_S_METRIC} <= logged


def test_rate_limited_item_runs_never_trip_the_circuit_breaker(wsi_root: Path, tmp_path: Path) -> None:
    provider = Refusing("rate_limit")
    items = make_items(5, SLIDES)
    summary = asyncio.run(evaluate(items, wsi_root, provider, tmp_path, concurrency=1, breaker_after=2))
    records = read_results(tmp_path / RESULTS_FILE)
    assert len(records) == 5 and all(r.cause == "rate_limit" for r in records)
    assert not summary.setup_failure


def test_the_report_line_says_429s_pauses_and_the_bound() -> None:
    pacing = Pacing(
        requests=100,
        requests_429=4,
        paused_s=4.2,
        requests_per_min=52.6,
        tokens_per_min=31_000,
        makespan_s=110.0,
        bound_s=100.0,
        limits={"requests": 60.0},
    )
    line = render_pacing(pacing)
    assert "4 of 100 requests answered 429, 4 s paused" in line
    assert "1.10x its bound 100 s" in line and "60 requests/min" in line
