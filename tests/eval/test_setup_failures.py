"""A run that cannot measure the model stops and says why (giant.eval.causes, giant.eval.runner).

Real runner, real synthetic slides; the providers are test doubles of the Provider protocol that fail
the way a refused key, a used-up quota or a server that is down fails through the SDKs (the
classification itself is tested through the real SDKs in tests/llm/test_error_causes.py).
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from giant.core import SetupCause
from giant.llm.types import (
    CallContext,
    Conversation,
    FatalProviderError,
    ModelTurn,
    TransientError,
)
from giant.record import RESULTS_FILE, read_results

from .runner_fixtures import SLIDES, FaultyProvider, evaluate, make_items, write_slides


class Refusing:
    """Fails every call with one cause (a refused key, a server that is down, ...), after `ok` calls
    have answered normally (a key revoked or a quota used up mid-run)."""

    name, model = "refusing", "refusing-1"

    def __init__(self, cause: SetupCause, *, ok: int = 0, latency: float = 0.01) -> None:
        self.cause, self.ok, self.latency = cause, ok, latency
        self.inner = FaultyProvider(answer_at=2)
        self.calls = 0

    async def next_turn(self, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        self.calls += 1
        await asyncio.sleep(self.latency)
        if self.calls <= self.ok:
            return await self.inner.next_turn(conversation, ctx)
        message = f"refusing: simulated {self.cause} failure"
        if self.cause in ("network", "server", "rate_limit"):
            raise TransientError(message, cause=self.cause)
        raise FatalProviderError(message, cause=self.cause)


@pytest.mark.parametrize("cause", ["key", "model_name", "quota"])
def test_a_fatal_answer_costs_one_request_and_stops_the_run(
    wsi_root: Path, tmp_path: Path, cause: str
) -> None:
    provider = Refusing(cause)  # type: ignore[arg-type]
    summary = asyncio.run(evaluate(make_items(8, SLIDES), wsi_root, provider, tmp_path, concurrency=8))
    assert provider.calls == 1  # the first call goes alone; the other 7 items never send theirs
    assert not summary.complete and summary.setup_failure.startswith(f"stopped at the first {cause} error")
    records = read_results(tmp_path / RESULTS_FILE)
    assert [(r.status, r.cause) for r in records] == [("provider_error", cause)]


def test_a_quota_used_up_mid_run_lets_no_new_item_start(wsi_root: Path, tmp_path: Path) -> None:
    provider = Refusing("quota", ok=4)
    summary = asyncio.run(evaluate(make_items(20, SLIDES), wsi_root, provider, tmp_path, concurrency=2))
    assert summary.setup_failure and provider.calls <= 4 + 2  # the calls in flight, then nothing new
    assert len(read_results(tmp_path / RESULTS_FILE)) < 20


def test_the_circuit_breaker_stops_a_run_whose_server_is_down(wsi_root: Path, tmp_path: Path) -> None:
    provider = Refusing("server")
    items = make_items(30, SLIDES)
    summary = asyncio.run(evaluate(items, wsi_root, provider, tmp_path, concurrency=1, breaker_after=3))
    records = read_results(tmp_path / RESULTS_FILE)
    assert len(records) == 3 and all(r.status == "retries_exhausted" and r.cause == "server" for r in records)
    assert "circuit breaker" in summary.setup_failure and "3 server" in summary.setup_failure
    # One call per item-run: the provider's retry layer already asked again (tests/llm/test_error_causes:
    # 1 + max_retries requests), so the agent does not send the step again on top of it.
    assert provider.calls == 3
    assert summary.setup_causes == {"server": 3}


def test_model_failures_reset_the_breaker(wsi_root: Path, tmp_path: Path) -> None:
    """Unparseable replies are the model's failures, a measurement: the run goes on to the end."""
    provider = FaultyProvider(fault_rate=1.0, faults=("parse",))
    items = make_items(8, SLIDES)
    summary = asyncio.run(evaluate(items, wsi_root, provider, tmp_path, concurrency=1, breaker_after=2))
    assert summary.complete and not summary.setup_failure and summary.n_items == 8
    assert all(r.cause is None for r in read_results(tmp_path / RESULTS_FILE))


def test_missing_slides_mark_the_run_and_a_rerun_after_the_copy_completes_it(tmp_path: Path) -> None:
    """Half the slides first: the run completes its measurable items and says it is incomplete; the
    same rerun after the slides arrive retries exactly the missing ones, with no flag."""
    root, full = tmp_path / "wsi", write_slides(tmp_path / "all", ["a.svs", "b.svs", "c.svs", "d.svs"])
    root.mkdir()
    for name in ("a.svs", "b.svs"):
        shutil.copy(full / name, root / name)
    items = make_items(8, ["a.svs", "b.svs", "c.svs", "d.svs"])
    first = asyncio.run(evaluate(items, root, FaultyProvider(), tmp_path / "run1"))
    assert not first.complete and first.n_slides_missing == 4
    assert (
        "4 of 8 item-runs have no slide" in first.incomplete_reason
        and "skip_missing=true" in first.incomplete_reason
    )

    for name in ("c.svs", "d.svs"):
        shutil.copy(full / name, root / name)
    provider = FaultyProvider()
    second = asyncio.run(evaluate(items, root, provider, tmp_path / "run2", resume_from=tmp_path / "run1"))
    assert second.complete and second.n_slides_missing == 0 and second.n_items == 8
    assert provider.calls == 4 * 2  # only the 4 missing items ran (2 calls each); the rest were kept


def test_a_rerun_retries_setup_failures_and_keeps_model_failures(
    wsi_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = make_items(6, SLIDES)
    asyncio.run(evaluate(items, wsi_root, Refusing("key"), tmp_path / "run1"))
    capsys.readouterr()
    summary = asyncio.run(
        evaluate(items, wsi_root, FaultyProvider(), tmp_path / "run2", resume_from=tmp_path / "run1")
    )
    assert summary.complete and summary.n_items == 6
    line = capsys.readouterr().out.strip().splitlines()[0]
    assert line == "resume: kept 0 item-runs, retrying 1 (1 key)"

    parse = FaultyProvider(fault_rate=1.0, faults=("parse",))
    asyncio.run(evaluate(items, wsi_root, parse, tmp_path / "run3"))
    capsys.readouterr()
    asyncio.run(evaluate(items, wsi_root, FaultyProvider(), tmp_path / "run4", resume_from=tmp_path / "run3"))
    line = capsys.readouterr().out.strip().splitlines()[0]
    assert line.startswith("resume: kept 6 item-runs, retrying none; 6 model failures kept as measurements")
