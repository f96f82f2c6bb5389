"""The batch runner on real synthetic slides with the real agent: outputs, faults, budget, skipping."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest

from giant.agent.modes import parse_agent
from giant.errors import ConfigError
from giant.eval.resume import run_key
from giant.eval.runner import item_seed
from giant.eval.voting import majority_vote
from giant.llm.types import CallContext, Conversation, ModelTurn
from giant.record import RESULTS_FILE, RUNNER_ERROR, SKIPPED, read_results
from giant.record.summary import Summary
from tests.eval.runner_fixtures import (
    SLIDES,
    CountingProvider,
    FaultyProvider,
    evaluate,
    make_items,
    random_provider,
)


def test_run_writes_one_line_per_item_run_trajectories_and_summary(wsi_root: Path, tmp_path: Path) -> None:
    items = make_items(6, SLIDES)
    summary = asyncio.run(evaluate(items, wsi_root, random_provider(), tmp_path, concurrency=3))

    records = read_results(tmp_path / RESULTS_FILE)
    assert sorted(r.key for r in records) == sorted(item.key for item in items)
    for record in records:
        assert record.status == "answered" and record.reason
        assert record.label is not None and record.method
        assert record.correct == (record.label == record.truth)
        assert record.seed == item_seed(0, record.key, 0)
        assert record.calls == 3 and record.crops == 2  # T=3: two random crops, then the answer
        assert record.trajectory is not None
        trajectory = json.loads((tmp_path / record.trajectory / "trajectory.json").read_text())
        assert trajectory["item_key"] == record.key
    on_disk = Summary.model_validate_json((tmp_path / "summary.json").read_text())
    assert on_disk == summary
    assert summary.complete and summary.n_items == 6 and summary.counts_by_status == {"answered": 6}
    assert summary.accuracy == pytest.approx(sum(r.correct for r in records) / 6)
    assert summary.metric.point == summary.accuracy
    assert summary.totals.crops == 12 and summary.totals.calls == 18
    assert summary.provenance.run_key == run_key("c0ffee", "da7a")
    assert "giant" in summary.provenance.versions


@pytest.mark.slow
def test_fifty_items_with_thirty_percent_faulty_calls_lose_nothing(wsi_root: Path, tmp_path: Path) -> None:
    provider = FaultyProvider(seed=7, fault_rate=0.3, answer_at=3)
    # The timeout is short for a hang, yet long enough that a healthy episode on two busy cores
    # never hits it while reading a crop.
    agent = parse_agent(
        {"mode": "giant", "max_steps": 4, "crop_size": 256, "max_retries": 2, "item_timeout_s": 3.0}
    )
    items = make_items(50, SLIDES)
    summary = asyncio.run(evaluate(items, wsi_root, provider, tmp_path, agent=agent, concurrency=8))

    assert set(provider.faults) == {"transient", "parse", "out_of_bounds", "hang"}
    assert 0.2 < sum(provider.faults.values()) / provider.calls < 0.4
    records = read_results(tmp_path / RESULTS_FILE)
    assert sorted(r.key for r in records) == sorted(item.key for item in items)  # each exactly once
    assert all(r.status and r.reason for r in records)
    statuses = Counter(r.status for r in records)
    assert summary.counts_by_status == dict(statuses)
    assert sum(summary.counts_by_status.values()) == 50 == summary.n_items
    assert statuses["answered"] > 0 and statuses["timeout"] > 0 and len(statuses) > 2
    failures = [r for r in records if r.label is None]
    assert summary.n_scored == 50 - len(failures)
    assert sum(summary.failure_reasons.values()) == len(failures)
    assert summary.accuracy == pytest.approx(sum(r.correct for r in records) / 50)  # failures are wrong
    # a hang (cause timeout) is no measurement of the model: the run is incomplete, with no score
    assert not summary.complete and summary.n_unmeasured >= statuses["timeout"] > 0


def test_budget_stop_starts_no_new_item_and_marks_the_run_incomplete(wsi_root: Path, tmp_path: Path) -> None:
    provider = FaultyProvider(cost=0.01, answer_at=2)  # two calls per item-run: $0.02 each
    items = make_items(20, SLIDES)
    summary = asyncio.run(evaluate(items, wsi_root, provider, tmp_path, concurrency=2, budget_usd=0.1))

    records = read_results(tmp_path / RESULTS_FILE)
    assert 2 <= len(records) < 20
    assert provider.calls == sum(r.calls for r in records)  # every started item-run was recorded
    assert summary.totals.cost_usd == pytest.approx(sum(r.dollars or 0 for r in records))
    assert summary.totals.cost_usd is not None and summary.totals.cost_usd <= 0.1 + 1e-9
    assert not summary.complete and "budget" in summary.incomplete_reason
    assert summary.n_items == len(records)


@pytest.mark.parametrize("skip_missing", [True, False])
def test_missing_slides_are_skipped_or_failed(wsi_root: Path, tmp_path: Path, skip_missing: bool) -> None:
    items = make_items(6, [*SLIDES, "missing.svs"])  # items 2 and 5 have no slide
    summary = asyncio.run(evaluate(items, wsi_root, random_provider(), tmp_path, skip_missing=skip_missing))

    records = {r.key: r for r in read_results(tmp_path / RESULTS_FILE)}
    missing = {"demo/2", "demo/5"}
    expected = SKIPPED if skip_missing else "slide_missing"
    assert {key for key, r in records.items() if r.status == expected} == missing
    assert all("missing.svs" in records[key].reason for key in missing)
    assert summary.n_skipped == (2 if skip_missing else 0)
    assert summary.n_items == (4 if skip_missing else 6)
    assert summary.n_scored == 4
    assert summary.counts_by_status[expected] == 2


def test_a_slide_path_leaving_the_root_is_an_item_failure_even_with_skip_missing(
    wsi_root: Path, tmp_path: Path
) -> None:
    items = make_items(2, ["a.svs", "../a.svs"])
    summary = asyncio.run(evaluate(items, wsi_root, random_provider(), tmp_path, skip_missing=True))
    records = {r.key: r for r in read_results(tmp_path / RESULTS_FILE)}
    assert records["demo/1"].status == "slide_error" and "leaves the WSI root" in records["demo/1"].reason
    assert records["demo/1"].calls == 0 and records["demo/0"].status == "answered"
    assert summary.n_items == 2 and summary.n_skipped == 0


def test_runs_per_item_vote_and_per_run_metrics(wsi_root: Path, tmp_path: Path) -> None:
    items = make_items(8, SLIDES)
    provider = CountingProvider(random_provider())
    summary = asyncio.run(evaluate(items, wsi_root, provider, tmp_path, runs_per_item=3, concurrency=4))

    records = read_results(tmp_path / RESULTS_FILE)
    assert len(records) == 24 and set(provider.calls) == {(r.key, r.run_index) for r in records}
    assert len({r.seed for r in records}) == 24  # every item-run has its own seed
    by_item: dict[str, list] = {}
    for r in sorted(records, key=lambda r: r.run_index):
        by_item.setdefault(r.key, []).append(r.label)
    truth = {item.key: item.truth for item in items}
    voted = sum(majority_vote(labels) == truth[key] for key, labels in by_item.items()) / 8
    assert summary.metric.point == pytest.approx(voted)
    assert len(summary.per_run) == 3
    for k, value in enumerate(summary.per_run):
        assert value == pytest.approx(sum(r.correct for r in records if r.run_index == k) / 8)
    assert summary.counts_by_status == {"answered": 24}


class BrokenProvider(CountingProvider):
    """Raises a plain exception (a bug, not a ProviderError) for one item."""

    async def next_turn(self, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        if ctx.item_key == "demo/1":
            raise RuntimeError("boom")
        return await super().next_turn(conversation, ctx)


def test_an_episode_that_raises_is_recorded_and_the_run_goes_on(wsi_root: Path, tmp_path: Path) -> None:
    items = make_items(4, SLIDES)
    summary = asyncio.run(evaluate(items, wsi_root, BrokenProvider(random_provider()), tmp_path))
    records = {r.key: r for r in read_results(tmp_path / RESULTS_FILE)}
    assert len(records) == 4
    broken = records["demo/1"]
    assert broken.status in {RUNNER_ERROR, "provider_error"} and "boom" in broken.reason
    assert summary.counts_by_status["answered"] == 3 and summary.n_items == 4


def test_progress_bar_shows_done_failures_and_dollars(
    wsi_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = make_items(3, [*SLIDES, "missing.svs"])  # demo/2 fails: slide missing
    asyncio.run(evaluate(items, wsi_root, FaultyProvider(cost=0.25), tmp_path, progress=True))
    bar = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()[-1]
    assert "3/3" in bar and "failures=1" in bar and "spent=$1.00" in bar  # 2 items x 2 calls x $0.25


def test_items_mixing_metrics_are_rejected(wsi_root: Path, tmp_path: Path) -> None:
    items = make_items(2, SLIDES) + make_items(2, SLIDES, benchmark="other", metric="balanced_accuracy")
    with pytest.raises(ConfigError, match="mix metrics"):
        asyncio.run(evaluate(items, wsi_root, random_provider(), tmp_path))


def test_existing_results_are_not_overwritten_without_resume(wsi_root: Path, tmp_path: Path) -> None:
    items = make_items(2, SLIDES)
    asyncio.run(evaluate(items, wsi_root, random_provider(), tmp_path))
    with pytest.raises(ConfigError, match="resume_from"):
        asyncio.run(evaluate(items, wsi_root, random_provider(), tmp_path))
