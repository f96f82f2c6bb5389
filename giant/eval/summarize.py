"""results.jsonl -> summary.json: the run's metric with failures counted incorrect, and its context.

Computed from the result records only, so an interrupted-and-resumed run and an uninterrupted one
give the same summary. Counts by status, failure reasons and extraction methods are over item-runs
(runs_per_item lines per item); the metrics are over items (voted when runs_per_item > 1). With
runs_per_item > 1 the mean over the runs of each run's metric (per_run_mean, the "x1" figure beside
the vote) gets its own bootstrap over items too, with the run's seed and replicates.
Skipped items (missing slides with skip_missing=true) are reported in n_skipped and never scored.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Sequence

from giant.core import Item
from giant.data.defects import Defect
from giant.eval.bootstrap import bootstrap, bootstrap_per_run_mean
from giant.eval.causes import record_cause
from giant.eval.gpu_cost import GpuRate
from giant.eval.metrics import METRICS, score
from giant.eval.navigation import summarize_navigation
from giant.eval.progress import is_failure
from giant.eval.scoring_settings import ScoringSettings
from giant.eval.voting import item_label
from giant.llm.types import TokenCounts
from giant.record import SKIPPED, ResultRecord, latest_by_slot
from giant.record.summary import Bootstrap, Magnification, Provenance, Summary, Totals
from giant.record.tool_use import tool_use
from giant.wsi.magnification import objective_band

_PATH = re.compile(r"(?<![\w<])(?:[A-Za-z]:)?[\w.~-]*[/\\][^\s,;:()'\"]+")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def summarize(  # noqa: PLR0913  every total of a run goes into its summary
    records: Sequence[ResultRecord],
    items: Sequence[Item],
    *,
    dataset: str,
    metric_name: str,
    runs_per_item: int,
    seed: int,
    scoring: ScoringSettings,
    provenance: Provenance,
    wall_s: float = 0.0,
    ran: int = 0,
    earlier_s: float = 0.0,
    gpu: GpuRate | None = None,
    incomplete_reason: str = "",
    setup_failure: str = "",
    stop_cause: str | None = None,
    dataset_defects: Sequence[Defect] = (),
) -> Summary:
    """`ran` is how many item-runs this invocation executed (for items_per_hour over `wall_s`);
    `earlier_s` the active seconds of the invocations this one resumes; `gpu` the server's GPU price,
    which then makes the run's cost (giant.eval.gpu_cost);
    `setup_failure` why the runner halted (giant.eval.causes), if it did; `dataset_defects` the
    loader's report on the items, recorded as it is."""
    slots = {(item.key, k) for item in items for k in range(runs_per_item)}
    latest = {slot: record for slot, record in latest_by_slot(list(records)).items() if slot in slots}
    runs = list(latest.values())
    if not incomplete_reason and len(latest) < len(slots):
        incomplete_reason = f"{len(slots) - len(latest)} of {len(slots)} item-runs have no result"
    unmeasured = Counter(cause for record in runs if (cause := record_cause(record)) is not None)
    if not incomplete_reason and unmeasured:  # the one rule: an unmeasured item-run is never complete
        named = ", ".join(f"{n} {cause}" for cause, n in unmeasured.most_common())
        incomplete_reason = f"{unmeasured.total()} of {len(slots)} item-runs unmeasured ({named})"

    by_item: dict[str, list[ResultRecord]] = {}
    for record in runs:
        by_item.setdefault(record.key, []).append(record)
    skipped = [key for key, recs in by_item.items() if all(r.status == SKIPPED for r in recs)]
    scored = [item for item in items if item.key in by_item and item.key not in skipped]

    truth = [item.truth for item in scored]
    voted = [item_label(by_item[item.key], runs_per_item, scoring.tie_rule) for item in scored]
    answered = [(t, p) for t, p in zip(truth, voted, strict=True) if p is not None]
    per_run = _per_run(scored, latest, runs_per_item, metric_name) if runs_per_item > 1 else []

    return Summary(
        benchmark=dataset,
        metric_name=metric_name,
        complete=not incomplete_reason,
        incomplete_reason=incomplete_reason,
        n_items=len(scored),
        n_scored=len(answered),
        n_skipped=len(skipped),
        runs_per_item=runs_per_item,
        metric=_bootstrap(truth, voted, metric_name, scoring.bootstrap_replicates, seed),
        metric_scored_only=score([t for t, _ in answered], [p for _, p in answered], metric_name)
        if answered
        else None,
        **{name: score(truth, voted, name) if scored else 0.0 for name in METRICS},
        per_run=per_run,
        per_run_mean=statistics.fmean(per_run) if per_run else None,
        per_run_std=statistics.stdev(per_run) if len(per_run) > 1 else None,
        per_run_bootstrap=_per_run_bootstrap(
            scored, latest, runs_per_item, metric_name, scoring.bootstrap_replicates, seed
        )
        if per_run
        else None,
        setup_failure=setup_failure,
        stop_cause=stop_cause,
        n_slides_missing=sum(record.status == "slide_missing" for record in runs),
        n_unmeasured=unmeasured.total(),
        setup_causes=dict(unmeasured),
        counts_by_status=dict(Counter(record.status for record in runs)),
        failure_reasons=dict(Counter(reason_kind(record) for record in runs if is_failure(record))),
        extraction_methods=dict(Counter(record.method for record in runs if record.method)),
        tie_rule=scoring.tie_rule,
        panda_null_as_zero=scoring.panda_null_as_zero,
        totals=_totals(runs, wall_s, ran, earlier_s + wall_s, gpu),
        magnification=_magnification(runs),
        provenance=provenance,
        dataset_defects=list(dataset_defects),
        navigation=summarize_navigation(
            [r for r in runs if r.key not in skipped], replicates=scoring.bootstrap_replicates, seed=seed
        ),
        tool_use=tool_use(runs),
    )


def reason_kind(record: ResultRecord) -> str:
    """A failure reason with its item-specific parts (the key, paths, numbers) masked, so the
    counts group alike failures: "slide for <key> not found: tried <path> and <path>"."""
    text = record.reason.replace(record.key, "<key>")
    text = _PATH.sub("<path>", text)
    return _NUMBER.sub("N", text) or record.status


def _per_run(
    scored: list[Item], latest: dict[tuple[str, int], ResultRecord], runs_per_item: int, metric_name: str
) -> list[float]:
    """Each run index scored alone over the items that have that run (failures incorrect)."""
    values = []
    for k in range(runs_per_item):
        pairs = [(item.truth, latest[item.key, k].label) for item in scored if (item.key, k) in latest]
        if pairs:
            values.append(score([t for t, _ in pairs], [p for _, p in pairs], metric_name))
    return values


def _per_run_bootstrap(
    scored: list[Item],
    latest: dict[tuple[str, int], ResultRecord],
    runs_per_item: int,
    metric_name: str,
    replicates: int,
    seed: int,
) -> Bootstrap:
    """per_run_mean with its bootstrap over items: the runs scored as `_per_run` scores them."""
    slots = [[latest.get((item.key, k)) for item in scored] for k in range(runs_per_item)]
    return bootstrap_per_run_mean(
        [item.truth for item in scored],
        [[None if record is None else record.label for record in run] for run in slots],
        metric_name,
        measured=[[record is not None for record in run] for run in slots],
        replicates=replicates,
        seed=seed,
    )


def _bootstrap(
    truth: list[int], pred: list[int | None], metric_name: str, replicates: int, seed: int
) -> Bootstrap:
    if not truth:  # nothing scored (all skipped, or stopped before the first item): no estimate
        return Bootstrap(point=0.0, mean=0.0, std=0.0, ci_low=0.0, ci_high=0.0, replicates=0, seed=seed)
    return bootstrap(truth, pred, metric_name, replicates=replicates, seed=seed)


def _magnification(runs: list[ResultRecord]) -> Magnification | None:
    """The images' µm/px over the run's records (None where no record carries them)."""
    recorded = [mpp for record in runs if record.mpps is not None for mpp in record.mpps]
    if not any(record.mpps is not None for record in runs):
        return None
    known = sorted(mpp for mpp in recorded if mpp is not None)
    return Magnification(
        images=len(recorded),
        unknown=len(recorded) - len(known),
        finest_mpp=known[0] if known else None,
        median_mpp=statistics.median(known) if known else None,
        coarsest_mpp=known[-1] if known else None,
        by_objective=dict(sorted(Counter(objective_band(mpp) for mpp in known).items())),
    )


def _totals(
    runs: list[ResultRecord], wall_s: float, ran: int, active_s: float, gpu: GpuRate | None
) -> Totals:
    """The counts over all records; the rates over the run's active time. A priced GPU is the cost
    of a self-hosted run: its server bills no tokens, so the calls' own dollars are not added."""
    episodes = [record for record in runs if record.calls]
    costs = [record.dollars for record in runs]
    tokens = TokenCounts.summed(runs)
    calls = sum(r.calls for r in runs)
    dollars = None if any(cost is None for cost in costs) else sum(c or 0.0 for c in costs)
    gpu_cost = gpu.cost(active_s) if gpu is not None else None
    return Totals(
        **tokens,
        cost_usd=gpu_cost if gpu_cost is not None else dollars,
        calls=calls,
        crops=sum(r.crops for r in runs),
        steps_mean=statistics.fmean(r.steps for r in episodes) if episodes else 0.0,
        steps_max=max((r.steps for r in episodes), default=0),
        crops_per_item=statistics.fmean(r.crops for r in episodes) if episodes else 0.0,
        wall_s=wall_s,
        items_per_hour=ran * 3600.0 / wall_s if wall_s > 0 else 0.0,
        active_s=active_s,
        gpu_cost_usd=gpu_cost,
        output_tokens_per_s=tokens["output_tokens"] / active_s if active_s > 0 else 0.0,
        calls_per_min=calls * 60.0 / active_s if active_s > 0 else 0.0,
    )
