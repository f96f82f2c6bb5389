"""Which settings a comparison names as differences: read from each setting's role (giant.roles), on
records as a job writes them (RunSettings.record(), its resolved_config.json)."""

from __future__ import annotations

from hydra import compose

from giant.compare.pairs import compare_runs
from giant.compare.sources import RunData, outcomes
from giant.config import RunSettings
from giant.record import ResultRecord

BASE = ["provider=openai", "dry_run=true"]


def _job(name: str, overrides: list[str]) -> RunData:
    record = RunSettings.from_config(compose("config", overrides=[*BASE, *overrides])).record()
    records = [
        ResultRecord(
            key=f"demo/{i}", benchmark="demo", run_index=0, seed=0, prediction='{"answer": 1}',
            label=1 + i % 2, truth=1, correct=i % 2 == 0, status="answered",
        )
        for i in range(6)
    ]  # fmt: skip
    return RunData(
        where=name,
        task="demo",
        metric_name="accuracy",
        runs_per_item=1,
        tie_rule="lowest_run_index",
        config=record,
        items=outcomes(records, 1, "lowest_run_index"),
    )


def _differs(*overrides: str) -> dict[str, str]:
    comparison = compare_runs([_job("a", []), _job("b", list(overrides))], replicates=20)
    return comparison.runs[1].differs


def test_pacing_is_no_method_difference(hydra_init: None) -> None:
    assert _differs("provider.timeout_s=30", "provider.rpm=60", "concurrency=2") == {}
    assert _differs("ledger=false", "skip_missing=true", "provider.max_retries=5", "breaker_after=2") == {}
    assert _differs("limit=3", "record_requests=true", "tracking.run_name=x", "paths.wsi_root=/x") == {}


def test_a_method_scoring_or_vote_setting_is_named(hydra_init: None) -> None:
    assert _differs("agent.max_steps=5") == {"agent.max_steps": "5"}
    assert _differs("provider.model=gpt-5-mini", "seed=1") == {"provider.model": "gpt-5-mini", "seed": "1"}
    assert _differs("panda_null_as_zero=false", "runs_per_item=5") == {
        "panda_null_as_zero": "False",
        "runs_per_item": "5",
    }
