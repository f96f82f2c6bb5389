"""The run's hard dollar budget, enforced per provider call across every concurrent episode.

Counting finished item-runs cannot cap a run: with N episodes in flight nothing is known until the
first one ends, and one item can cost many calls. So every call reserves its expected cost before it
is sent and settles with the real cost when it returns; a call that would take spent + reserved past
the limit waits for the calls in flight to settle and is refused when it still does not fit. The
overshoot is then bounded by how far the calls in flight at that moment cost more than reserved.

A reservation is the request's input tokens (text at ~4 characters per token, images by the
provider's own image-token rule) at the model's input rate, plus the rest of a call's cost (output,
reasoning) at the mean of this run's settled calls, or the dry run's per-call output estimate before
any call has settled. A model whose calls cost None (not in the price table) cannot be budgeted: the
log says so once and nothing is blocked.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from giant.agent.limits import LimitExceeded
from giant.eval.dryrun import OUTPUT_TOKENS_PER_CALL
from giant.llm.pricing import Pricing, TierRates
from giant.llm.runtime import estimate_tokens
from giant.llm.types import Conversation, Tier

log = logging.getLogger(__name__)

_EPSILON = 1e-9  # float sums of prices must not refuse a call that fits exactly


class CallPricer:
    """The expected dollar cost of a request before it is sent, learning from the calls that settle."""

    def __init__(
        self,
        model: str,
        pricing: Pricing | None,
        image_tokens: Callable[[int, int], int] | None,
        tier: Tier = "standard",
    ) -> None:
        rates = pricing.rates(model) if pricing is not None else None
        # The tier's own rates where the table sells the model at it (else standard: never too low).
        self.rates: TierRates | None = (rates.tier(tier) or rates) if rates is not None else None
        self.image_tokens = image_tokens
        # Before any call settles: the dry run's output assumption at the model's output rate.
        self.prior = OUTPUT_TOKENS_PER_CALL * self.rates.output / 1e6 if self.rates else 0.0
        self._rest_sum = 0.0
        self._settled = 0

    def input_usd(self, conversation: Conversation) -> float:
        if self.rates is None:
            return 0.0
        return estimate_tokens(conversation, self.image_tokens) * self.rates.input / 1e6

    def reservation(self, conversation: Conversation) -> tuple[float, float]:
        """(whole reservation, its input part)."""
        inputs = self.input_usd(conversation)
        rest = self._rest_sum / self._settled if self._settled else self.prior
        return inputs + rest, inputs

    def learn(self, input_part: float, cost: float) -> None:
        """What the request's size did not predict (output, reasoning) informs the next reservations."""
        self._rest_sum += max(0.0, cost - input_part)
        self._settled += 1


@dataclass
class Hold:
    amount: float
    input_part: float


class RunBudget:
    """spent + reserved across all episodes of one run (one event loop: no lock needed, since no
    await separates a check from its update)."""

    def __init__(self, limit: float | None, pricer: CallPricer, *, spent: float = 0.0) -> None:
        self.limit = limit
        self.pricer = pricer
        self.spent = spent
        self.reserved = 0.0
        self.in_flight = 0
        self.in_flight_at_cap: int | None = None  # calls in flight when the cap was first reached
        self.refusal = ""  # why the first call was refused; the runner then starts no new item
        self.enforced = True
        self._settled = asyncio.Event()

    def expected_usd(self, conversation: Conversation) -> float | None:
        """A call's whole reservation, so the item budget is checked against the same figure; None
        once a call without a price has switched the budget off."""
        return self.pricer.reservation(conversation)[0] if self.enforced else None

    def exhausted(self) -> bool:
        return bool(self.refusal) or (
            self.limit is not None and self.enforced and self.spent >= self.limit - _EPSILON
        )

    def _fits(self, amount: float) -> bool:
        assert self.limit is not None
        return self.spent + self.reserved + amount <= self.limit + _EPSILON

    def _note_cap(self) -> None:
        if self.in_flight_at_cap is None:
            self.in_flight_at_cap = self.in_flight

    async def hold(
        self,
        conversation: Conversation,
        *,
        blocked: Callable[[], AbstractContextManager[object]] = nullcontext,
    ) -> Hold:
        """Reserve a call's expected cost, waiting for calls in flight to settle while it does not fit;
        LimitExceeded("budget") when it cannot fit. `blocked()` is entered while the call waits (batch
        mode: the round it would join is sent without it, with the calls that fit)."""
        amount, input_part = self.pricer.reservation(conversation)
        if self.limit is not None and self.enforced:
            while not self._fits(amount):
                self._note_cap()
                if not self.in_flight:
                    reason = (
                        f"run budget: ${self.spent:.4f} spent of ${self.limit:g}; the next call "
                        f"(~${amount:.4f}) would pass it"
                    )
                    self.refusal = self.refusal or reason
                    raise LimitExceeded("budget", f"{reason}; rerun with a larger budget_usd to continue")
                with blocked():
                    await self._settled.wait()
                amount, input_part = self.pricer.reservation(conversation)  # the mean may have moved
        self.reserved += amount
        self.in_flight += 1
        return Hold(amount, input_part)

    def settle(self, hold: Hold, cost: float | None, *, model: str) -> None:
        """Replace the reservation with the real cost (0 for a call that was cut before it returned)."""
        self.reserved -= hold.amount
        self.in_flight -= 1
        if cost is None:
            if self.enforced and self.limit is not None:
                log.warning("model %r has no price: the run budget cannot be enforced for it", model)
            self.enforced = False
        else:
            self.spent += cost
            self.pricer.learn(hold.input_part, cost)
        if self.limit is not None and self.spent + self.reserved > self.limit + _EPSILON:
            self._note_cap()
        self._settled.set()
        self._settled = asyncio.Event()
