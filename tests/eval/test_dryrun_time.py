"""The dry run times the run (giant.eval.timing): wall time per tier from calls, concurrency and rate
limits; GPU-hours and dollars for a self-hosted model; and a dry run with slides missing exits with the
incomplete code, after its report."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from giant.eval.timing import BATCH_ROUND_S, CALL_S, FLEX_CALL_S, OUTPUT_TOKENS_PER_CALL, estimate_time
from giant.llm.config import provider_settings
from tests.helpers.cli import Env, clean_env

GPT5 = provider_settings("openai", model="gpt-5")


def _time(**changes: object) -> dict[str, tuple[float, float]]:
    args: dict = dict(item_runs=221, calls_per_item_run=20, input_tokens=0, concurrency=8, provider=GPT5)
    args["tiers"] = ["standard", "flex", "batch"]
    args.update(changes)
    return {t.tier: (t.low_s, t.high_s) for t in estimate_time(**args).tiers}


def test_each_tier_is_a_range_from_the_calls_and_the_concurrency() -> None:
    tiers = _time()
    calls = 221 * 20
    assert tiers["standard"] == pytest.approx((calls * CALL_S[0] / 8, calls * CALL_S[1] / 8))
    assert tiers["flex"] == pytest.approx((calls * FLEX_CALL_S[0] / 8, calls * FLEX_CALL_S[1] / 8))
    # a batch run takes one round per step, whatever the concurrency
    assert tiers["batch"] == pytest.approx((20 * BATCH_ROUND_S[0], 20 * BATCH_ROUND_S[1]))
    assert _time(concurrency=16)["standard"][0] == pytest.approx(tiers["standard"][0] / 2)
    # never more lanes than items
    assert _time(item_runs=2, concurrency=8)["standard"][0] == pytest.approx(2 * 20 * CALL_S[0] / 2)


def test_rate_limits_set_a_floor() -> None:
    slow = provider_settings("openai", model="gpt-5", rpm=10)
    floor = 221 * 20 / 10 * 60  # every call within 10 requests a minute
    assert _time(provider=slow)["standard"][0] == pytest.approx(floor)
    tokens = provider_settings("openai", model="gpt-5", tpm=1_000_000)
    calls = 221 * 20
    floor = (50_000_000 + calls * OUTPUT_TOKENS_PER_CALL) / 1_000_000 * 60
    assert _time(provider=tokens, input_tokens=50_000_000)["standard"][0] == pytest.approx(floor)


def test_a_self_hosted_model_is_timed_in_gpu_hours_and_dollars() -> None:
    served = provider_settings(
        "openai_compatible", model="m", base_url="http://127.0.0.1:9/v1", gpu_hour_usd=2.5, gpus=2,
        tokens_per_s=40.0,
    )  # fmt: skip
    estimate = estimate_time(
        item_runs=10, calls_per_item_run=5, input_tokens=0, concurrency=5, provider=served, tiers=[]
    )
    (tier,) = estimate.tiers
    assert tier.tier == "self-hosted" and tier.high_s == pytest.approx(5 * tier.low_s)  # 5 lanes or 1
    gpu = estimate.gpu
    assert gpu is not None and gpu.low_hours == pytest.approx(tier.low_s * 2 / 3600)
    assert f"${gpu.low_hours * 2.5:,.2f}" in gpu.render()
    unknown = provider_settings("openai_compatible", model="m", base_url="http://127.0.0.1:9/v1")
    estimate = estimate_time(
        item_runs=10, calls_per_item_run=5, input_tokens=0, concurrency=5, provider=unknown, tiers=[]
    )
    assert (
        estimate.tiers == [] and estimate.gpu is not None and "provider.tokens_per_s" in estimate.gpu.render()
    )


def test_a_dry_run_times_the_run_and_exits_4_with_slides_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The job of scripts/run_eval.py in-process (giant.evaluate): what it prints, and the exit code and
    line the command line gives for its end."""
    from giant.data.demo import build_demo

    demo = build_demo(tmp_path / "cache" / "demo")
    partial = tmp_path / "partial"
    shutil.copytree(demo.wsi_root, partial)
    (partial / "demo_01.svs").unlink()
    env = clean_env(GIANT_CACHE_DIR=str(tmp_path / "cache"), GIANT_OUTPUT_DIR=str(tmp_path / "out"))
    end = Env(tmp_path, env).ended(
        tmp_path / "out" / "dry",
        "provider=openai", "provider.model=gpt-5", "dataset=demo", f"dataset.csv_path={demo.csv_path}",
        f"dataset.wsi_root={partial}", "dataset.benchmark=demo_shapes", "limit=4", "dry_run=true",
    )  # fmt: skip
    out = capsys.readouterr().out
    assert end.code == 4, end
    assert "expected wall time (4 item-runs x 20 calls, concurrency 8):" in out
    for tier in ("standard", "flex", "batch"):
        assert f"\n  {tier}: " in out
    assert end.line == (
        f"run_eval: dry run: 1 of 4 items have no usable slide (1 missing, 0 unreadable) under "
        f"dataset.wsi_root={partial}; fetch them with scripts/fetch_slides.py or point the setting at them"
    )
