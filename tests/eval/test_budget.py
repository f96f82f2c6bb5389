"""The hard budget: the run's `budget_usd` and the item's `agent.item_budget_usd` are enforced per
call, before the call is sent, across concurrent episodes (giant.eval.budget)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from giant.agent.episode import run_episode
from giant.agent.modes import parse_agent
from giant.config import RunOptions, shipped
from giant.eval.budget import CallPricer
from giant.eval.items import JobData
from giant.eval.runner import RunServices, run_eval
from giant.llm.config import provider_settings
from giant.llm.pricing import Pricing, Rates
from giant.llm.types import CallContext, Conversation, ModelTurn, Provider
from giant.record import RESULTS_FILE, read_results
from giant.record.summary import Summary
from giant.wsi.synthetic import write_synthetic_slide

from .runner_fixtures import SLIDE_H, SLIDE_W, SLIDES, FaultyProvider, make_items

COST = 0.25  # dollars per call
CALLS_PER_ITEM = 4  # the stub crops three times and answers at the fourth call: $1 per item
BUDGET = 0.5
AGENT = parse_agent({"mode": "giant", "max_steps": CALLS_PER_ITEM, "crop_size": 256})


class Metered:
    """A stub provider with a known cost per call (None: a model without a price) whose calls overlap;
    it measures what the budget test needs: dollars paid and the calls in flight when the paid
    dollars first reach the budget."""

    def __init__(self, cost: float | None, budget: float = BUDGET) -> None:
        self.inner = FaultyProvider(cost=0.0, latency=0.05, answer_at=CALLS_PER_ITEM)
        self.name, self.model = self.inner.name, self.inner.model
        self.cost, self.budget = cost, budget
        self.calls = self.in_flight = 0
        self.spent = 0.0
        self.in_flight_at_cap: int | None = None

    async def next_turn(self, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        self.calls += 1
        self.in_flight += 1
        try:
            turn = await self.inner.next_turn(conversation, ctx)
        finally:
            self.in_flight -= 1
        turn.usage.cost_usd = self.cost
        self.spent += self.cost or 0.0
        if self.in_flight_at_cap is None and self.spent >= self.budget - 1e-9:
            self.in_flight_at_cap = self.in_flight
        return turn


def pricing(output_per_million: float) -> Pricing:
    """The stub's price table: the dry run's per-call output prior is 400 tokens at this rate."""
    rates = Rates(input=1.0, cached_input=1.0, cache_write=1.0, output=output_per_million)
    return Pricing({"faulty-1": rates})


def run(
    items: int,
    provider: Provider,
    out: Path,
    wsi_root: Path,
    table: Pricing,
    *,
    resume_from: Path | None = None,
    **settings: object,
) -> Summary:
    return asyncio.run(
        run_eval(
            JobData(make_items(items, SLIDES), wsi_root, "da7a"),
            RunServices(provider, pricing=table, progress_bar=False),
            agent=AGENT,
            run=shipped(RunOptions, **settings),
            out_dir=out,
            config_hash="c0ffee",
            resume_from=resume_from,
        )
    ).summary


@pytest.mark.parametrize("output_rate", [600.0, 10.0], ids=["prior-near", "prior-50x-low"])
def test_run_budget_caps_spend_at_the_calls_in_flight(
    wsi_root: Path, tmp_path: Path, output_rate: float
) -> None:
    provider = Metered(COST)
    summary = run(8, provider, tmp_path, wsi_root, pricing(output_rate), concurrency=4, budget_usd=BUDGET)

    in_flight = provider.in_flight_at_cap
    assert in_flight is not None  # the budget was reached
    overshoot = provider.spent - BUDGET
    print(
        f"\nbudget ${BUDGET} at ${COST}/call, concurrency 4: spent ${provider.spent:.2f} "
        f"({provider.calls} calls), overshoot ${max(overshoot, 0):.2f} = {max(overshoot, 0) / COST:.0f} "
        f"calls, "
        f"{in_flight} in flight at the cap (before: $4.00 spent, 8x the budget, 12 calls over)"
    )
    assert provider.spent <= BUDGET + in_flight * COST + 1e-9
    assert summary.totals.cost_usd == pytest.approx(provider.spent)  # every paid call is recorded
    assert not summary.complete and "budget" in summary.incomplete_reason
    records = read_results(tmp_path / RESULTS_FILE)
    assert {r.status for r in records} == {"budget_exceeded"}  # stopped inside the item, not after it
    assert all(r.calls and "run budget" in r.reason for r in records)


def test_budget_exceeded_item_resumes_with_a_larger_budget(wsi_root: Path, tmp_path: Path) -> None:
    table = pricing(600.0)
    first = run(4, Metered(COST), tmp_path, wsi_root, table, concurrency=4, budget_usd=BUDGET)
    stopped = {r.key for r in read_results(tmp_path / RESULTS_FILE) if r.status == "budget_exceeded"}
    assert stopped and not first.complete

    provider = Metered(COST, budget=100.0)
    second = run(
        4, provider, tmp_path, wsi_root, table, concurrency=4, budget_usd=100.0, resume_from=tmp_path
    )
    records = {r.key: r for r in read_results(tmp_path / RESULTS_FILE)}
    assert second.complete and len(records) == 4
    assert all(r.status == "answered" and r.calls == CALLS_PER_ITEM for r in records.values())
    assert stopped <= set(records)


def test_unknown_price_warns_once_and_runs(
    wsi_root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    provider = Metered(None)
    with caplog.at_level(logging.WARNING, logger="giant.eval.budget"):
        summary = run(6, provider, tmp_path, wsi_root, Pricing({}), concurrency=4, budget_usd=BUDGET)

    warnings = [r.getMessage() for r in caplog.records if "cannot be enforced" in r.getMessage()]
    assert len(warnings) == 1 and "faulty-1" in warnings[0]
    assert summary.complete and summary.counts_by_status == {"answered": 6}
    assert provider.calls == 6 * CALLS_PER_ITEM


@pytest.mark.parametrize(
    ("item_budget", "calls", "reason"),
    [(0.6, 2, "left room for one more call"), (0.3, 1, "stopped before call 2")],
)
def test_item_budget_stops_before_the_call_that_would_pass_it(
    tmp_path: Path, item_budget: float, calls: int, reason: str
) -> None:
    slide = tmp_path / "s.svs"
    write_synthetic_slide(slide, SLIDE_W, SLIDE_H, seed=0)
    provider = Metered(COST, budget=item_budget)
    agent = AGENT.model_copy(update={"item_budget_usd": item_budget})
    traj = asyncio.run(run_episode(make_items(1, [slide.name])[0], slide, provider, agent, out_dir=None))

    assert provider.calls == calls
    assert traj.totals.cost_usd is not None and traj.totals.cost_usd <= item_budget
    assert traj.status == "budget_exceeded" and reason in traj.reason


@pytest.mark.parametrize(
    ("overrides", "tier"),
    [
        ({}, "standard"),
        ({"batch": True}, "batch"),
        ({"service_tier": "flex", "flex_fallback": "wait"}, "flex"),
        ({"service_tier": "flex", "flex_fallback": "standard"}, "standard"),  # may be billed standard
    ],
)
def test_the_budget_reserves_at_the_tier_the_calls_are_billed_at(
    overrides: dict[str, object], tier: str
) -> None:
    """A batch or flex run reserved at standard prices stopped at about half its budget."""
    settings = provider_settings("openai", **overrides)
    assert settings.billed_tier() == tier
    table = Pricing.load("conf/pricing.yaml")
    conversation = Conversation(system="x" * 4000, messages=[])
    standard = CallPricer("gpt-5", table, None).reservation(conversation)[1]
    billed = CallPricer("gpt-5", table, None, settings.billed_tier()).reservation(conversation)[1]
    rates = table.rates("gpt-5")
    assert rates is not None and rates.batch is not None and rates.flex is not None
    expected = {"standard": rates.input, "batch": rates.batch.input, "flex": rates.flex.input}[tier]
    assert billed == pytest.approx(standard * expected / rates.input) and billed > 0
    if tier != "standard":
        assert billed < standard
