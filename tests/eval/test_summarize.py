"""results -> Summary: failures count as incorrect, skipped items are not scored, votes over runs."""

from __future__ import annotations

import numpy as np
import pytest

from giant.core import Item
from giant.eval.scoring_settings import NavigationSettings, ScoringSettings
from giant.eval.summarize import summarize
from giant.record import SKIPPED, ResultRecord
from giant.record.summary import Provenance

SCORING = ScoringSettings(
    tie_rule="lowest_run_index",
    panda_null_as_zero=True,
    bootstrap_replicates=200,
    navigation=NavigationSettings(coverage_mpp=2.0, hit_mpp=1.0, hit_overlap=0.1),
)
PROVENANCE = Provenance(run_key="k", config_hash="c", dataset_hash="d")


def item(i: int, truth: int) -> Item:
    return Item(
        benchmark="demo",
        benchmark_id=str(i),
        image_path="s.svs",
        prompt="q",
        options=("a", "b", "c"),
        truth=truth,
        metric="balanced_accuracy",
    )


def rec(
    i: int, label: int | None, truth: int, *, run_index: int = 0, status: str = "", **kw: object
) -> ResultRecord:
    return ResultRecord.model_validate(
        {
            "key": f"demo/{i}",
            "benchmark": "demo",
            "run_index": run_index,
            "seed": 0,
            "label": label,
            "truth": truth,
            "correct": label == truth,
            "status": status or ("answered" if label is not None else "retries_exhausted"),
            "reason": "answered" if label is not None else "3 consecutive failures",
            "method": "response_json" if label is not None else None,
            "calls": 2,
            "steps": 2,
            **kw,
        }
    )


def summary_of(records: list[ResultRecord], items: list[Item], runs: int = 1, reason: str = ""):
    return summarize(
        records,
        items,
        dataset="demo",
        metric_name="balanced_accuracy",
        runs_per_item=runs,
        seed=3,
        scoring=SCORING,
        provenance=PROVENANCE,
        incomplete_reason=reason,
    )


def test_failures_count_as_incorrect_and_scored_only_is_reported_beside() -> None:
    truths = [1, 1, 1, 2, 3, 3]
    items = [item(i, t) for i, t in enumerate(truths)]
    labels = [1, 1, None, 2, 3, None]  # every answer right, two failures
    s = summary_of([rec(i, lab, t) for i, (lab, t) in enumerate(zip(labels, truths, strict=True))], items)
    # per-class recall: class 1 -> 2/3, class 2 -> 1, class 3 -> 1/2
    assert s.balanced_accuracy == pytest.approx((2 / 3 + 1 + 1 / 2) / 3)
    assert s.metric.point == s.balanced_accuracy
    assert s.accuracy == pytest.approx(4 / 6)
    assert s.metric_scored_only == pytest.approx(1.0)
    assert (s.n_items, s.n_scored, s.n_skipped) == (6, 4, 0)
    assert s.counts_by_status == {"answered": 4, "retries_exhausted": 2}
    assert s.failure_reasons == {"N consecutive failures": 2}
    assert s.extraction_methods == {"response_json": 4}
    assert s.complete and s.metric.replicates == 200 and s.metric.seed == 3


def test_failure_reasons_group_alike_failures_of_different_items() -> None:
    items = [item(i, 1) for i in range(3)]
    records = [
        rec(
            i,
            None,
            1,
            status="slide_missing",
            reason=f"slide for demo/{i} not found: tried /w/s{i}.svs and /w/d/s{i}.svs",
        )
        for i in range(2)
    ]
    records.append(rec(2, None, 1, status="timeout", reason="item timeout of 900 s reached"))
    s = summary_of(records, items)
    assert s.failure_reasons == {
        "slide for <key> not found: tried <path> and <path>": 2,
        "item timeout of N s reached": 1,
    }


def test_skipped_items_are_reported_not_scored() -> None:
    items = [item(0, 1), item(1, 2), item(2, 2)]
    records = [rec(0, 1, 1), rec(1, 1, 2), rec(2, None, 2, status=SKIPPED)]
    s = summary_of(records, items)
    assert (s.n_items, s.n_scored, s.n_skipped) == (2, 2, 1)
    assert s.accuracy == pytest.approx(0.5)
    assert s.failure_reasons == {}  # a skip is not a failure
    assert s.counts_by_status == {"answered": 2, SKIPPED: 1}


def test_votes_over_runs_and_reports_each_run() -> None:
    items = [item(0, 1), item(1, 2)]
    records = [
        rec(0, 1, 1, run_index=0),
        rec(0, 2, 1, run_index=1),
        rec(0, 1, 1, run_index=2),  # item 0 votes 1 (right)
        rec(1, 3, 2, run_index=0),
        rec(1, 2, 2, run_index=1),
        rec(1, None, 2, run_index=2),  # item 1 ties 3 vs 2: lowest run index wins -> 3 (wrong)
    ]
    s = summary_of(records, items, runs=3)
    assert s.accuracy == pytest.approx(0.5)
    assert s.per_run == pytest.approx([0.5, 0.5, 0.5])  # run 2: item 0 right, item 1 failed
    assert s.per_run_mean == pytest.approx(0.5) and s.per_run_std == pytest.approx(0.0)
    assert sum(s.counts_by_status.values()) == 6  # counts are per item-run


def test_a_later_record_supersedes_an_earlier_one_and_missing_runs_make_it_incomplete() -> None:
    items = [item(0, 1), item(1, 2), item(2, 3)]
    records = [rec(0, None, 1), rec(0, 1, 1), rec(1, 2, 2)]  # item 0 retried; item 2 never ran
    s = summary_of(records, items)
    assert s.n_items == 2 and s.accuracy == pytest.approx(1.0)
    assert not s.complete and "1 of 3" in s.incomplete_reason


def test_totals_sum_tokens_and_cost_unknown_when_any_price_is() -> None:
    items = [item(0, 1), item(1, 1)]
    records = [rec(0, 1, 1, dollars=0.5, input_tokens=10), rec(1, 1, 1, dollars=0.25, crops=4)]
    known = summary_of(records, items)
    assert known.totals.cost_usd == pytest.approx(0.75)
    assert known.totals.input_tokens == 10 and known.totals.crops == 4 and known.totals.calls == 4
    unknown = summary_of([rec(0, 1, 1, dollars=None), rec(1, 1, 1, dollars=0.25)], items)
    assert unknown.totals.cost_usd is None


def test_nothing_run_gives_an_empty_incomplete_summary() -> None:
    s = summary_of([], [item(0, 1)], reason="budget stop")
    assert s.n_items == 0 and not s.complete and s.incomplete_reason == "budget stop"


def test_per_run_mean_has_a_bootstrap_over_items_by_hand() -> None:
    """2 items x 2 runs: run 0 gets both right (1.0), run 1 only item 0 (0.5), so per_run_mean is
    0.75; each replicate resamples the 2 items (the vote's index matrix, seed 3) and averages the two
    runs' metric on it: item 0 counts 1.0, item 1 0.5."""
    items = [item(0, 1), item(1, 2)]
    records = [
        rec(0, 1, 1, run_index=0),
        rec(0, 1, 1, run_index=1),
        rec(1, 2, 2, run_index=0),
        rec(1, 3, 2, run_index=1),
    ]
    for metric in ("accuracy", "balanced_accuracy"):
        s = summarize(
            records,
            items,
            dataset="demo",
            metric_name=metric,
            runs_per_item=2,
            seed=3,
            scoring=SCORING,
            provenance=PROVENANCE,
        )
        assert s.per_run == pytest.approx([1.0, 0.5]) and s.per_run_mean == pytest.approx(0.75)
        boot = s.per_run_bootstrap
        assert boot is not None and boot.point == s.per_run_mean
        by_hand = np.asarray([1.0, 0.5])[np.random.default_rng(3).integers(0, 2, size=(200, 2))].mean(axis=1)
        assert boot.mean == pytest.approx(float(by_hand.mean()))
        assert boot.std == pytest.approx(float(by_hand.std(ddof=1)))
        assert (boot.ci_low, boot.ci_high, boot.replicates, boot.seed) == (0.5, 1.0, 200, 3)
        again = summarize(
            list(reversed(records)),
            items,
            dataset="demo",
            metric_name=metric,
            runs_per_item=2,
            seed=3,
            scoring=SCORING,
            provenance=PROVENANCE,
        )
        assert again.per_run_bootstrap == boot  # deterministic by seed, whatever the records' order


def test_one_run_per_item_has_no_per_run_bootstrap() -> None:
    s = summary_of([rec(0, 1, 1), rec(1, 2, 2)], [item(0, 1), item(1, 2)])
    assert s.per_run == [] and s.per_run_mean is None and s.per_run_bootstrap is None
