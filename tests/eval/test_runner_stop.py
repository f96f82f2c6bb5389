"""A stop request (giant.interrupt) on the real runner and agent: no new item, no new provider call,
in-flight calls get their grace period, unfinished item-runs are left for the resumed run."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from giant import interrupt
from giant.config import RunOptions, shipped
from giant.core import Item
from giant.eval.items import JobData
from giant.eval.runner import STOP_GRACE_S, RunServices, run_eval
from giant.interrupt import StopRequest, stop_on_signals
from giant.llm.types import CallContext, Conversation, ModelTurn, Provider
from giant.record import RESULTS_FILE, read_results
from giant.record.summary import Summary
from tests.eval.runner_fixtures import AGENT, SLIDES, CountingProvider, FaultyProvider, make_items


class StoppingProvider(CountingProvider):
    """Counts calls and requests the stop as call number `after` starts (that call is in flight)."""

    def __init__(self, inner: Provider, stop: StopRequest, after: int) -> None:
        super().__init__(inner)
        self.stop, self.after = stop, after

    async def next_turn(self, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        if sum(self.calls.values()) + 1 == self.after:
            self.stop.request(signal.SIGTERM)
        return await super().next_turn(conversation, ctx)


async def _run(
    items: list[Item],
    wsi_root: Path,
    provider: Provider,
    out_dir: Path,
    stop: StopRequest | None,
    stop_grace_s: float = STOP_GRACE_S,
    **settings: object,
) -> Summary:
    services = RunServices(
        provider,
        stop=stop if stop is not None else StopRequest(),
        stop_grace_s=stop_grace_s,
        progress_bar=False,
    )
    return (
        await run_eval(
            JobData(items, wsi_root, "da7a"),
            services,
            agent=AGENT,
            run=shipped(RunOptions, **{"concurrency": 2, **settings}),
            out_dir=out_dir,
            config_hash="c0ffee",
            resume_from=out_dir if (out_dir / RESULTS_FILE).is_file() else None,
        )
    ).summary


def test_a_stop_starts_no_call_and_the_resumed_run_calls_no_finished_item(
    wsi_root: Path, tmp_path: Path
) -> None:
    items = make_items(8, SLIDES)
    stop = StopRequest()
    # Two workers, two calls per item: call 7 is the last call of the third item; the fourth item's
    # second call would be call 8 and must never start.
    provider = StoppingProvider(FaultyProvider(latency=0.05, answer_at=2), stop, after=7)
    summary = asyncio.run(_run(items, wsi_root, provider, tmp_path, stop))

    assert sum(provider.calls.values()) == 7  # the call in flight finished; none started after the stop
    records = read_results(tmp_path / RESULTS_FILE)
    done = {record.key for record in records}
    assert all(provider.calls[record.key, 0] == record.calls == 2 for record in records)
    assert {key for key, _ in provider.calls} - done  # an item cut after its first call: not recorded
    assert 0 < len(done) < 8 and not summary.complete
    assert "SIGTERM" in summary.incomplete_reason
    assert f"{8 - len(done)} item-runs left" in summary.incomplete_reason

    again = CountingProvider(FaultyProvider(answer_at=2))
    resumed = asyncio.run(_run(items, wsi_root, again, tmp_path, StopRequest()))
    assert resumed.complete and resumed.n_items == 8
    assert {key for key, _ in again.calls} == {item.key for item in items} - done
    assert sorted(r.key for r in read_results(tmp_path / RESULTS_FILE)) == sorted(i.key for i in items)


def test_a_call_that_outlasts_the_grace_period_is_cancelled(wsi_root: Path, tmp_path: Path) -> None:
    items = make_items(2, SLIDES)
    provider = FaultyProvider(latency=600.0, answer_at=2)  # a model that does not answer in time
    stop = StopRequest()

    async def run() -> Summary:
        asyncio.get_running_loop().call_later(0.3, stop.request, signal.SIGTERM)
        return await _run(items, wsi_root, provider, tmp_path, stop, stop_grace_s=0.5)

    started = time.monotonic()
    summary = asyncio.run(run())
    # Generous for a loaded CI machine: a run that waited for its calls would take their 600 s.
    assert time.monotonic() - started < 120
    assert read_results(tmp_path / RESULTS_FILE) == [] and not summary.complete
    # The run's first call goes alone until a reply comes back (giant.eval.limits), then cut:
    # no call after the stop.
    assert provider.calls == 1


def test_a_real_sigterm_requests_a_stop_and_the_old_handler_comes_back(
    wsi_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(interrupt, "_last_stop", None)  # the process-wide record is restored afterwards
    items = make_items(6, SLIDES)
    provider = CountingProvider(FaultyProvider(latency=0.2, answer_at=2))
    before = signal.getsignal(signal.SIGTERM)

    async def run(stop: StopRequest) -> Summary:
        asyncio.get_running_loop().call_later(0.5, os.kill, os.getpid(), signal.SIGTERM)
        return await _run(items, wsi_root, provider, tmp_path, stop, concurrency=1)

    with stop_on_signals() as stop:
        summary = asyncio.run(run(stop))
    assert stop.requested and stop.reason == "SIGTERM" and interrupt.stopped_by() == "SIGTERM"
    assert not summary.complete and sum(provider.calls.values()) < 18
    assert signal.getsignal(signal.SIGTERM) == before
