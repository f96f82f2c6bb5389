"""What may refuse an episode's next provider call, checked at one point (`Limits.call`), and the one
exception that says so.

Four limits can stop a call before it is sent: the run's dollar budget (giant.eval.budget), the
item's own budget (agent.item_budget_usd), a stop request (SIGTERM, a time limit) and a halt (a fatal
provider answer: key, model, quota). Each raises `LimitExceeded` with its `kind` (as inspect_ai's
limits raise one error naming their type), so no layer has to know another's signal: the episode
turns a budget into the item's status `budget_exceeded`, and lets a stop or a halt end the run with
the item unrecorded, for the resumed run to start again.

The run's limits are shared by every episode of the run (giant.eval.limits.RunLimits); an episode run
on its own (the CLI's ask, tests) has its item budget only.
"""

from __future__ import annotations

from typing import Literal, Protocol

from giant.llm.types import CallContext, Conversation, ModelTurn, Provider

LimitKind = Literal["budget", "item_budget", "stopped", "halted"]
_EPSILON = 1e-9  # float sums of prices must not refuse a call that fits exactly


class LimitExceeded(Exception):
    """A limit refused the next provider call; `reason` is the line the item or run records."""

    def __init__(self, kind: LimitKind, reason: str) -> None:
        super().__init__(reason)
        self.kind: LimitKind = kind
        self.reason = reason

    @property
    def ends_run(self) -> bool:
        """A stop or a halt ends the run, not the item: the item keeps no result line."""
        return self.kind in ("stopped", "halted")


class SharedLimits(Protocol):
    """The limits one run sets on every call of every episode."""

    def expected_usd(self, conversation: Conversation) -> float | None:
        """The call's expected cost as the run budget reserves it; None when it cannot price it."""
        ...

    async def call(self, provider: Provider, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        """Admit, send and settle one call: LimitExceeded before it is sent, ProviderError from it."""
        ...


class Limits:
    """One episode's limits: its item budget, then the run's (when it runs in one)."""

    def __init__(self, item_budget_usd: float | None, run: SharedLimits | None = None) -> None:
        self.item_budget_usd = item_budget_usd
        self.run = run
        self._last_expected = 0.0  # the latest call's expected cost, for item_budget_reached

    def expected_usd(self, conversation: Conversation, mean_usd: float) -> float:
        """A call's expected cost: the run budget's reservation when it has one, else the mean cost
        of the episode's calls so far."""
        estimate = self.run.expected_usd(conversation) if self.run is not None else None
        return mean_usd if estimate is None else estimate

    def item_budget_reached(self, spent_usd: float, mean_usd: float) -> bool:
        """True when the item budget leaves room for one more call but not two: the next call must
        be the answer."""
        budget = self.item_budget_usd
        if budget is None:
            return False
        return spent_usd + 2 * max(self._last_expected, mean_usd) > budget + _EPSILON

    async def call(
        self,
        provider: Provider,
        conversation: Conversation,
        ctx: CallContext,
        *,
        spent_usd: float,
        mean_usd: float,
    ) -> ModelTurn:
        """The one point every call passes: the item budget is checked before the call, not after it,
        then the run's limits admit, send and settle it."""
        self._last_expected = expected = self.expected_usd(conversation, mean_usd)
        budget = self.item_budget_usd
        if budget is not None and spent_usd + expected > budget + _EPSILON:
            raise LimitExceeded(
                "item_budget",
                f"stopped before call {ctx.step}: ${spent_usd:.4f} spent + ~${expected:.4f} for the call "
                f"would pass the ${budget:g} item budget (agent.item_budget_usd)",
            )
        if self.run is None:
            return await provider.next_turn(conversation, ctx)
        return await self.run.call(provider, conversation, ctx)
