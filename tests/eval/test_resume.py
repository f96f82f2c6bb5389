"""Resume: a killed run continues without paying again, and ends where an uninterrupted run ends."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from giant.agent.modes import parse_agent
from giant.errors import ConfigError
from giant.eval.resume import RETRYABLE, ResumeIndex, carry_over, left_to_run, run_key
from giant.record import RESULTS_FILE, ResultRecord, ResultsWriter, read_results
from giant.record.summary import Summary, Totals
from tests.eval.runner_fixtures import (
    SLIDES,
    CountingProvider,
    FaultyProvider,
    GatedProvider,
    evaluate,
    make_items,
    random_provider,
)


def counting_random() -> CountingProvider:
    return CountingProvider(random_provider())


def comparable(summary: Summary) -> dict:
    """Everything but the clock (and the commit, which a concurrent commit may move)."""
    clock = set(Totals.TIMED - {"cost_usd"})
    return summary.model_dump(exclude={"totals": clock, "provenance": {"git_commit"}})


async def _killed_after(n: int, items: list, wsi_root: Path, provider: GatedProvider, out_dir: Path) -> None:
    """Cancel the run after `n` results, once all three running episodes wait on the provider."""
    task = asyncio.create_task(evaluate(items, wsi_root, provider, out_dir, concurrency=3))
    while len(read_results(out_dir / RESULTS_FILE)) < n:
        assert not task.done(), "the run finished before it could be killed"
        await asyncio.sleep(0.005)
    provider.closed = True
    while provider.parked < 3:
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.slow
def test_killed_run_resumes_without_calling_finished_items_and_matches_an_uninterrupted_run(
    wsi_root: Path, tmp_path: Path
) -> None:
    items = make_items(16, SLIDES)
    straight = asyncio.run(evaluate(items, wsi_root, counting_random(), tmp_path / "straight", concurrency=3))

    first = GatedProvider(random_provider())
    asyncio.run(_killed_after(5, items, wsi_root, first, tmp_path / "killed"))
    finished = {r.slot for r in read_results(tmp_path / "killed" / RESULTS_FILE)}
    assert 5 <= len(finished) < 16
    partial = Summary.model_validate_json((tmp_path / "killed" / "summary.json").read_text())
    assert not partial.complete and "interrupted" in partial.incomplete_reason

    second = counting_random()
    resumed = asyncio.run(
        evaluate(
            items, wsi_root, second, tmp_path / "resumed", resume_from=tmp_path / "killed", concurrency=3
        )
    )
    assert not finished & set(second.calls)  # finished item-runs were not called again
    assert set(second.calls) == {(item.key, 0) for item in items} - finished
    assert comparable(resumed) == comparable(straight)
    # the new job directory is self-contained: every record's trajectory was copied along
    for record in read_results(tmp_path / "resumed" / RESULTS_FILE):
        assert record.trajectory and (tmp_path / "resumed" / record.trajectory / "trajectory.json").is_file()


def test_retry_failed_reruns_only_transient_failures(wsi_root: Path, tmp_path: Path) -> None:
    items = make_items(12, SLIDES)
    agent = parse_agent({"mode": "giant", "max_steps": 3, "crop_size": 256, "max_retries": 1})
    faulty = FaultyProvider(seed=3, fault_rate=0.4, faults=("transient", "parse"))
    asyncio.run(evaluate(items, wsi_root, faulty, tmp_path, agent=agent))
    before = {r.slot: r for r in read_results(tmp_path / RESULTS_FILE)}
    retryable = {slot for slot, r in before.items() if r.status in RETRYABLE}
    assert retryable and len(retryable) < 12

    again = counting_random()
    asyncio.run(evaluate(items, wsi_root, again, tmp_path / "same", resume_from=tmp_path))
    assert not again.calls  # without retry_failed every recorded item-run is final

    retry = counting_random()
    summary = asyncio.run(
        evaluate(items, wsi_root, retry, tmp_path, resume_from=tmp_path, agent=agent, retry_failed=True)
    )
    assert set(retry.calls) == retryable
    after = {r.slot: r for r in read_results(tmp_path / RESULTS_FILE)}
    assert len(read_results(tmp_path / RESULTS_FILE)) == 12  # rewritten in place, no duplicates
    assert all(after[slot].status == "answered" for slot in retryable)
    assert all(after[slot] == before[slot] for slot in before.keys() - retryable)
    assert summary.complete and sum(summary.counts_by_status.values()) == 12


def record(key: str, status: str = "answered") -> ResultRecord:
    return ResultRecord(key=key, benchmark="demo", run_index=0, seed=1, truth=1, status=status, label=1)


def test_torn_last_line_is_dropped_and_a_corrupt_middle_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / RESULTS_FILE
    with ResultsWriter(path) as writer:
        writer.append(record("demo/0"))
        writer.append(record("demo/1"))
    with path.open("a") as file:
        file.write('{"key": "demo/2", "bench')  # killed mid-write
    assert [r.key for r in read_results(path)] == ["demo/0", "demo/1"]

    kept = carry_over(
        tmp_path, tmp_path, {("demo/0", 0), ("demo/1", 0), ("demo/2", 0)}, retry_failed=False
    ).kept
    assert set(kept) == {("demo/0", 0), ("demo/1", 0)}
    assert path.read_text().count("\n") == 2 and path.read_text().endswith("}\n")

    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "garbage", lines[1]]) + "\n")
    with pytest.raises(ConfigError, match="line 2"):
        read_results(path)


def test_carry_over_drops_foreign_skipped_and_retryable_records(tmp_path: Path) -> None:
    source, dest = tmp_path / "old", tmp_path / "new"
    with ResultsWriter(source / RESULTS_FILE) as writer:
        for key, status in [
            ("demo/0", "answered"),
            ("demo/1", "timeout"),
            ("demo/2", "skipped"),
            ("x/9", "answered"),
        ]:
            writer.append(record(key, status))
    slots = {(f"demo/{i}", 0) for i in range(3)}
    assert set(carry_over(source, dest, slots, retry_failed=False).kept) == {("demo/0", 0), ("demo/1", 0)}
    assert set(carry_over(source, dest, slots, retry_failed=True).kept) == {("demo/0", 0)}
    assert [r.key for r in read_results(dest / RESULTS_FILE)] == ["demo/0"]
    with pytest.raises(ConfigError, match=r"no results\.jsonl"):
        carry_over(tmp_path / "nowhere", dest, slots, retry_failed=False)


def test_left_to_run_counts_what_carry_over_would_run_again(tmp_path: Path) -> None:
    """The job asks a self-hosted server (its preflight) only when this is above zero."""
    source = tmp_path / "old"
    slots = {(f"demo/{i}", 0) for i in range(3)}
    assert left_to_run(None, slots, retry_failed=False) == 3
    assert left_to_run(tmp_path / "nowhere", slots, retry_failed=False) == 3
    with ResultsWriter(source / RESULTS_FILE) as writer:
        for key, status in [("demo/0", "answered"), ("demo/1", "timeout"), ("x/9", "answered")]:
            writer.append(record(key, status))
    assert left_to_run(source, slots, retry_failed=False) == 1  # demo/2 has no record
    assert left_to_run(source, slots, retry_failed=True) == 2  # and the timeout runs again
    with ResultsWriter(source / RESULTS_FILE) as writer:
        writer.append(record("demo/2", "answered"))
    assert left_to_run(source, slots, retry_failed=False) == 0
    for retry_failed in (False, True):
        kept = carry_over(source, tmp_path / f"new{retry_failed}", slots, retry_failed=retry_failed).kept
        assert left_to_run(source, slots, retry_failed=retry_failed) == len(slots) - len(kept)


def test_resume_index_maps_the_run_key_to_the_latest_output_dir(tmp_path: Path) -> None:
    key = run_key("config", "data")
    assert key == run_key("config", "data") != run_key("config", "other") != run_key("other", "data")
    index = ResumeIndex(tmp_path / "index")
    assert index.lookup(key) is None
    out = tmp_path / "job1"
    out.mkdir()
    index.record(key, out, mlflow_run_id="abc")
    assert index.lookup(key) is None  # recorded before its first result: nothing to resume yet
    (out / RESULTS_FILE).write_text("")
    found = index.lookup(key)
    assert found is not None and Path(found.out_dir) == out.resolve() and found.mlflow_run_id == "abc"
    assert ResumeIndex(tmp_path / "index").lookup(key) == found  # persisted, not in memory
    shutil.rmtree(out)
    assert index.lookup(key) is None  # nothing left to resume from
