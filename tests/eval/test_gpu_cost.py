"""A self-hosted run's cost is its GPU time (wall time x gpus x price), and every run reports its
throughput; concurrent calls overlap, so the time is the run's span, not the sum of latencies."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from giant.config import RunOptions, shipped
from giant.eval.gpu_cost import GpuRate
from giant.eval.items import JobData
from giant.eval.runner import RunServices, run_eval
from giant.llm.config import provider_settings
from giant.llm.ledger import call_key
from giant.llm.providers.openai_compatible import OpenAICompatibleSettings
from giant.record.summary import Summary
from giant.roles import Role, roles
from giant.tracking.mlflow_logger import summary_metrics
from tests.eval.runner_fixtures import AGENT, SLIDES, FaultyProvider, make_items

LATENCY_S = 0.5
CALLS_PER_ITEM = 2  # FaultyProvider crops once, then answers
OUTPUT_TOKENS_PER_CALL = 100
CALL_USD = 0.01


def _run(
    wsi_root: Path, out_dir: Path, n: int, gpu: GpuRate | None, resume_from: Path | None = None
) -> Summary:
    provider = FaultyProvider(latency=LATENCY_S, cost=CALL_USD, answer_at=2)
    return asyncio.run(
        run_eval(
            JobData(make_items(n, SLIDES), wsi_root, "da7a"),
            RunServices(provider, gpu=gpu, progress_bar=False),
            agent=AGENT,
            run=shipped(RunOptions, concurrency=8),
            out_dir=out_dir,
            config_hash="c0ffee",
            resume_from=resume_from,
        )
    ).summary


def test_gpu_cost_is_the_runs_span_not_the_sum_of_latencies(wsi_root: Path, tmp_path: Path) -> None:
    gpu = GpuRate(gpus=2, gpu_hour_usd=3600.0)  # $2 per second of run
    summary = _run(wsi_root, tmp_path / "run", 8, gpu)
    totals = summary.totals
    assert totals.calls == 8 * CALLS_PER_ITEM
    latencies_s = totals.calls * LATENCY_S
    assert CALLS_PER_ITEM * LATENCY_S <= totals.active_s < latencies_s / 2  # eight items overlapped
    assert totals.active_s == totals.wall_s  # nothing resumed
    assert totals.gpu_cost_usd == pytest.approx(totals.active_s * 2)
    assert totals.cost_usd == totals.gpu_cost_usd  # the calls' own dollars are not added
    assert totals.output_tokens_per_s == pytest.approx(
        totals.calls * OUTPUT_TOKENS_PER_CALL / totals.active_s
    )
    assert totals.calls_per_min == pytest.approx(totals.calls * 60 / totals.active_s)
    metrics = summary_metrics(summary)
    assert metrics["cost_usd"] == metrics["gpu_cost_usd"] == pytest.approx(totals.gpu_cost_usd)
    assert metrics["calls_per_min"] == pytest.approx(totals.calls_per_min)


def test_without_a_gpu_price_the_calls_dollars_are_the_cost_and_rates_are_reported(
    wsi_root: Path, tmp_path: Path
) -> None:
    summary = _run(wsi_root, tmp_path / "run", 4, None)
    totals = summary.totals
    assert totals.gpu_cost_usd is None
    assert totals.cost_usd == pytest.approx(4 * CALLS_PER_ITEM * CALL_USD)
    assert totals.output_tokens_per_s > 0 and totals.calls_per_min > 0
    metrics = summary_metrics(summary)
    assert "gpu_cost_usd" not in metrics
    assert metrics["output_tokens_per_s"] == pytest.approx(totals.output_tokens_per_s)


def test_a_resumed_run_adds_the_earlier_active_time(wsi_root: Path, tmp_path: Path) -> None:
    gpu = GpuRate(gpus=1, gpu_hour_usd=3600.0)
    first = _run(wsi_root, tmp_path / "first", 2, gpu)
    second = _run(wsi_root, tmp_path / "second", 4, gpu, resume_from=tmp_path / "first")
    assert second.totals.active_s == pytest.approx(first.totals.active_s + second.totals.wall_s)
    assert second.totals.gpu_cost_usd == pytest.approx(second.totals.active_s)
    assert second.totals.calls == 4 * CALLS_PER_ITEM  # the rates are over all calls and all time


def test_gpu_settings_default_in_the_yaml_and_stay_out_of_hash_and_ledger_key() -> None:
    plain = provider_settings("openai_compatible", model="m", base_url="http://127.0.0.1:1/v1")
    assert isinstance(plain, OpenAICompatibleSettings)
    assert (plain.gpu_hour_usd, plain.gpus) == (None, 1)
    assert GpuRate.of(plain) is None
    priced = plain.model_copy(update={"gpu_hour_usd": 2.5, "gpus": 4})
    assert GpuRate.of(priced) == GpuRate(gpus=4, gpu_hour_usd=2.5)
    assert GpuRate(gpus=4, gpu_hour_usd=2.5).cost(3600) == pytest.approx(10.0)
    table = roles(OpenAICompatibleSettings)
    assert table["gpu_hour_usd"] is table["gpus"] is Role.OPERATIONAL
    keys = {
        call_key(
            provider="openai_compatible",
            model="m",
            settings=s.model_dump(mode="json"),
            request={},
            run_index=0,
        )
        for s in (plain, priced)
    }
    assert len(keys) == 1
