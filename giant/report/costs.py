"""Spend per task: tokens, dollars, the prompt-cache hit ratio, and the calls paid for against the
calls replayed from the ledger (giant.llm.ledger), which cost nothing new but were paid once."""

from __future__ import annotations

from dataclasses import dataclass

from giant.llm.types import TokenCounts
from giant.record import ResultRecord


@dataclass(frozen=True)
class TaskCost:
    task: str
    item_runs: int
    calls: int
    tokens: TokenCounts
    cost_usd: float | None  # new spend; None when some model had no price

    @property
    def cost_per_item_run(self) -> float | None:
        return None if self.cost_usd is None else self.cost_usd / self.item_runs

    @property
    def cache_hit_ratio(self) -> float:
        """Cached input tokens over all input tokens (the provider's prompt cache, not the ledger)."""
        return self.tokens.cached_input_tokens / self.tokens.input_tokens if self.tokens.input_tokens else 0.0

    @property
    def calls_paid(self) -> int:
        return self.calls - self.tokens.calls_replayed

    @property
    def tier_calls(self) -> str:
        """Paid calls per price tier, standard / flex / batch."""
        tokens = self.tokens
        standard = self.calls_paid - tokens.calls_flex - tokens.calls_batch
        return f"{standard} / {tokens.calls_flex} / {tokens.calls_batch}"

    @property
    def tier_costs(self) -> str:
        """New spend per price tier, standard / flex / batch."""
        if self.cost_usd is None:
            return "unknown"
        flex, batch = self.tokens.cost_flex_usd, self.tokens.cost_batch_usd
        return f"${self.cost_usd - flex - batch:.4f} / ${flex:.4f} / ${batch:.4f}"


def task_costs(records: list[ResultRecord]) -> list[TaskCost]:
    """One row per task (benchmark), then a total row named "all" when there are several tasks."""
    groups: dict[str, list[ResultRecord]] = {}
    for record in records:
        groups.setdefault(record.benchmark, []).append(record)
    rows = [_row(task, group) for task, group in sorted(groups.items())]
    return [*rows, _row("all", records)] if len(rows) > 1 else rows


def _row(task: str, records: list[ResultRecord]) -> TaskCost:
    dollars = [record.dollars for record in records]
    return TaskCost(
        task=task,
        item_runs=len(records),
        calls=sum(record.calls for record in records),
        tokens=TokenCounts(**TokenCounts.summed(records)),
        cost_usd=None if any(d is None for d in dollars) else sum(d for d in dollars if d is not None),
    )
