"""The run's limits on every provider call of every episode (giant.agent.limits.SharedLimits).

One object admits, sends and settles each call, so the order is fixed in one place:
1. a stop request or a halt starts no new call (LimitExceeded "stopped" / "halted"); the episode then
   leaves its item unrecorded and the resumed run starts it again;
2. the run budget reserves the call's expected cost, waiting for calls in flight to settle while it
   does not fit (LimitExceeded "budget" when it never will; giant.eval.budget); in batch mode a call
   waiting so counts as waiting for the round, whose batch then carries the calls that fit;
3. until one call has come back from the server with a reply, calls go one at a time: a refused key,
   an unknown model or a used-up quota then costs one request, not one per concurrent item (batch
   mode needs no gate: a round's calls are one request, and one at a time would split the round);
4. the call's real cost replaces its reservation, whatever way it ended; a fatal cause (key, model,
   quota) halts the run at once.
"""

from __future__ import annotations

import asyncio
from contextlib import nullcontext

from giant.agent.limits import LimitExceeded
from giant.eval.budget import RunBudget
from giant.eval.causes import FATAL_CAUSES, Halt, fatal_reason
from giant.interrupt import StopRequest
from giant.llm.batch import BatchCollector
from giant.llm.types import CallContext, Conversation, ModelTurn, Provider, ProviderError


class RunLimits:
    """The budget, the stop request, the halt and the first-call gate of one run; `batches` is the
    batch collector of a provider in batch mode (giant.llm.batch)."""

    def __init__(
        self, budget: RunBudget, stop: StopRequest, halt: Halt, batches: BatchCollector | None = None
    ) -> None:
        self.budget = budget
        self.stop = stop
        self.halt = halt
        self.batches = batches
        self._proven = False  # a reply came from the server: the key, model and quota work
        self._probe = asyncio.Lock()

    def expected_usd(self, conversation: Conversation) -> float | None:
        return self.budget.expected_usd(conversation)

    def check(self) -> None:
        """No new call after a halt or a stop request."""
        if self.halt:
            raise LimitExceeded("halted", self.halt.reason)
        if self.stop.requested:
            raise LimitExceeded("stopped", f"stop requested ({self.stop.reason})")

    async def call(self, provider: Provider, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        self.check()
        batches = self.batches
        hold = await self.budget.hold(
            conversation, blocked=lambda: batches.held_back() if batches else nullcontext()
        )
        cost: float | None = 0.0  # refused or cut (timeout, stop) before it returned: nothing to count
        try:
            self.check()  # a stop or halt may have come while the call waited for the budget
            turn = await self._gated(provider, conversation, ctx)
            cost = turn.usage.cost_usd
            return turn
        except ProviderError as exc:
            cost = exc.usage.cost_usd if exc.usage is not None else 0.0
            raise
        finally:
            self.budget.settle(hold, cost, model=provider.model)

    async def _gated(self, provider: Provider, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        if not self._proven and self.batches is None:
            async with self._probe:
                self.check()  # the call it waited for may have halted the run
                if not self._proven:
                    return await self._send(provider, conversation, ctx)
        return await self._send(provider, conversation, ctx)  # proven: no longer one at a time

    async def _send(self, provider: Provider, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        try:
            turn = await provider.next_turn(conversation, ctx)
        except ProviderError as exc:
            if exc.cause in FATAL_CAUSES:
                self.halt.trip(fatal_reason(exc.cause, str(exc)), exc.cause)
            elif exc.cause is None:  # the server answered (a reply the model got wrong)
                self._proven = True
            raise
        self._proven = self._proven or not turn.usage.replayed  # a ledger replay proves nothing
        return turn
