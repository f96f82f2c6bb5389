"""How a run's item-runs used the tools (agent.tools): per tool, its calls, the item-runs that called it,
and how many of those ended correct, for the summary (MLflow's tool_<tool>_* metrics) and the report.

"Correct after calling" is the tool ablation's question (experiment=tools): did the item-runs that
consulted a tool answer right more often than those that did not? The counts answer it per run; the
paired comparison across the ablation's cells is `compare`'s."""

from __future__ import annotations

from collections.abc import Sequence

from giant.record.results import ResultRecord


def tool_use(runs: Sequence[ResultRecord]) -> dict[str, float]:
    """`<tool>_calls`, `<tool>_item_runs` and `<tool>_correct` (of the item-runs that called it), for
    every tool some item-run called; empty when none did."""
    out: dict[str, float] = {}
    names = sorted({name for run in runs for name in (run.tool_calls or {})})
    for name in names:
        calling = [run for run in runs if (run.tool_calls or {}).get(name)]
        out[f"{name}_calls"] = float(sum((run.tool_calls or {})[name] for run in calling))
        out[f"{name}_item_runs"] = float(len(calling))
        out[f"{name}_correct"] = float(sum(run.correct for run in calling))
    return out
