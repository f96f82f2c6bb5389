"""The run's limits as one object (giant.eval.limits, giant.agent.limits): every call passes one check,
and every refusal is one exception type whose `kind` the episode turns into the item's status."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

from giant.agent.episode import run_episode
from giant.agent.limits import LimitExceeded
from giant.eval.budget import CallPricer, RunBudget
from giant.eval.causes import Halt, fatal_reason
from giant.eval.limits import RunLimits
from giant.interrupt import StopRequest
from giant.llm.pricing import Pricing, Rates
from giant.llm.types import CallContext, Conversation, FatalProviderError, ModelTurn, UserMessage
from giant.record import TRAJECTORY_FILE

from .runner_fixtures import AGENT, SLIDES, FaultyProvider, make_items

COST = 0.25  # each stub call costs exactly what is reserved for it (400 output tokens at $625/M)
PRICING = Pricing({"faulty-1": Rates(input=0.0, cached_input=0.0, cache_write=0.0, output=625.0)})
CONVERSATION = Conversation(system="s", messages=[UserMessage(parts=[])])


class Watched(FaultyProvider):
    """Costs COST a call and records, as each call starts, what the budget has committed (spent
    plus reserved) and how many calls are in flight."""

    def __init__(self, budget: RunBudget, *, fatal: bool = False) -> None:
        super().__init__(cost=COST, latency=0.02, answer_at=1)
        self.budget, self.fatal = budget, fatal
        self.committed: list[float] = []
        self.in_flight = self.most_in_flight = 0

    async def next_turn(self, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        self.committed.append(self.budget.spent + self.budget.reserved)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.fatal:
                await asyncio.sleep(0.02)
                raise FatalProviderError("401 invalid x-api-key", cause="key")
            return await super().next_turn(conversation, ctx)
        finally:
            self.in_flight -= 1


def limits(budget_usd: float | None, stop: StopRequest | None = None) -> RunLimits:
    budget = RunBudget(budget_usd, CallPricer("faulty-1", PRICING, None))
    return RunLimits(budget, stop or StopRequest(), Halt())


def ctx(step: int = 1) -> CallContext:
    item = make_items(1, SLIDES)[0]
    return CallContext(
        item_key=item.key, step=step, slide_width=100, slide_height=100, answer_space=item.answer_space
    )


async def calls(run: RunLimits, provider: Watched, n: int) -> list[ModelTurn | BaseException]:
    return await asyncio.gather(
        *(run.call(provider, CONVERSATION, ctx(i)) for i in range(1, n + 1)), return_exceptions=True
    )


def test_concurrent_reservations_never_pass_the_budget() -> None:
    run = limits(1.0)
    provider = Watched(run.budget)
    results = asyncio.run(calls(run, provider, 20))

    sent = [r for r in results if isinstance(r, ModelTurn)]
    refused = [r for r in results if isinstance(r, LimitExceeded)]
    assert len(sent) == 4 and len(refused) == 16  # $1 holds four $0.25 calls, whatever the concurrency
    assert provider.most_in_flight > 1  # the calls after the first did overlap
    assert all(committed <= 1.0 + 1e-9 for committed in provider.committed)
    assert run.budget.spent == pytest.approx(1.0) and run.budget.reserved == pytest.approx(0.0)
    assert {r.kind for r in refused} == {"budget"}
    assert all("run budget" in r.reason and "budget_usd" in r.reason for r in refused)


def test_a_stop_request_refuses_the_next_call_and_reserves_nothing() -> None:
    stop = StopRequest()
    stop.request(signal.SIGTERM)
    run = limits(1.0, stop)
    provider = Watched(run.budget)
    results = asyncio.run(calls(run, provider, 3))

    assert provider.calls == 0 and run.budget.reserved == 0 and run.budget.in_flight == 0
    assert all(isinstance(r, LimitExceeded) and r.kind == "stopped" and r.ends_run for r in results)


def test_a_fatal_first_call_halts_the_calls_waiting_behind_it() -> None:
    run = limits(None)
    provider = Watched(run.budget, fatal=True)
    results = asyncio.run(calls(run, provider, 5))

    assert provider.calls == 0 and len(provider.committed) == 1  # the first call went alone
    assert isinstance(results[0], FatalProviderError)
    halted = results[1:]
    assert all(isinstance(r, LimitExceeded) and r.kind == "halted" for r in halted)
    reason = fatal_reason("key", "401 invalid x-api-key")
    assert run.halt.reason == reason and all(str(r) == reason for r in halted)


def test_the_episode_turns_a_run_budget_into_its_status_and_a_stop_into_no_trajectory(
    wsi_root: Path, tmp_path: Path
) -> None:
    item = make_items(1, SLIDES)[0]
    slide = wsi_root / item.image_path
    refused = limits(0.1)  # the first call's $0.25 reservation never fits
    traj = asyncio.run(
        run_episode(item, slide, Watched(refused.budget), AGENT, out_dir=tmp_path / "a", limits=refused)
    )
    assert traj.status == "budget_exceeded" and traj.reason.startswith("run budget: $0.0000 spent of $0.1")
    assert (tmp_path / "a" / TRAJECTORY_FILE).is_file()

    stop = StopRequest()
    stop.request(signal.SIGTERM)
    stopped = limits(None, stop)
    with pytest.raises(LimitExceeded) as info:
        asyncio.run(
            run_episode(item, slide, Watched(stopped.budget), AGENT, out_dir=tmp_path / "b", limits=stopped)
        )
    assert info.value.kind == "stopped" and "SIGTERM" in info.value.reason
    assert not (tmp_path / "b" / TRAJECTORY_FILE).exists()  # the resumed run starts the item again
