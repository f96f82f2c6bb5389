"""Runs -> a comparison: per task every pair of its runs matched on their common items, the paired
difference with its bootstrap interval, McNemar's test on the discordant items, and the items that
flipped. Pure computation: reading runs is sources.py, files are render.py."""

from __future__ import annotations

import itertools
import string
from collections.abc import Sequence

from pydantic import BaseModel

from giant.compare.sources import ItemOutcome, RunData
from giant.compare.stats import PairedDifference, holm, mcnemar_exact, paired_bootstrap
from giant.errors import ConfigError
from giant.eval.metrics import score

PAIRED_UNIT = (
    "Paired unit: one item. A run with runs_per_item > 1 enters with the label it scored for the "
    "item (the majority vote of its runs, its own tie rule), so each run's metric here is the one "
    "it reported, restricted to the common items."
)
DIRECTION = (
    "In a pair 'X vs Y', X is A and Y is B: differences are B - A in percentage points, and a flip "
    "'right -> wrong' was right in A, wrong in B."
)


class RunEntry(BaseModel):
    letter: str
    name: str
    where: str
    run_id: str | None
    task: str
    metric_name: str
    n_items: int
    metric: float  # on all of its items (fraction)
    cost_per_item: float | None  # USD; None: unknown
    differs: dict[str, str]  # the settings in which the compared runs differ, this run's values


class Flip(BaseModel):
    key: str
    question: str = ""
    truth: int
    label_a: int | None
    label_b: int | None
    answer_a: str
    answer_b: str
    status_a: str
    status_b: str
    right_in: str  # "A": right -> wrong, "B": wrong -> right
    trajectory_a: str | None  # relative to the job folder, for the renderer to link
    trajectory_b: str | None
    link_a: str | None = None  # trajectory.html copied beside the comparison (giant.compare.links)
    link_b: str | None = None

    @property
    def direction(self) -> str:
        return "right -> wrong" if self.right_in == "A" else "wrong -> right"


class HitPair(BaseModel):
    """The evidence hit rates of a pair on the common items annotated in both, with McNemar's exact
    test on the items only one of them hit (docs/navigation.md)."""

    n: int
    rate_a: float
    rate_b: float
    a_only: int
    b_only: int
    p_value: float


class PairResult(BaseModel):
    task: str
    metric_name: str
    a: str  # letters of the two runs
    b: str
    n_common: int
    only_a: int  # items only run A has
    only_b: int
    metric_a: float  # on the common items
    metric_b: float
    difference: PairedDifference
    both_right: int
    both_wrong: int
    a_only_right: int  # discordant: A right, B wrong
    b_only_right: int
    p_value: float | None  # McNemar exact, accuracy tasks only
    p_holm: float | None = None  # Holm-adjusted over every McNemar test of the comparison
    flips: list[Flip]
    hits: HitPair | None = None  # None: no common item annotated in both


class Comparison(BaseModel):
    runs: list[RunEntry]
    pairs: list[PairResult]
    single: list[str]  # tasks with one run only: nothing to compare
    replicates: int
    seed: int
    holm_applied: bool
    notes: list[str]
    warnings: list[str] = []  # a line per task whose runs scored different versions of its questions


def _letters(n: int) -> list[str]:
    """A..Z, then AA, AB, ...: short names the tables can carry."""
    alphabet = string.ascii_uppercase
    out = list(alphabet[:n])
    for first, second in itertools.product(alphabet, repeat=2):
        if len(out) >= n:
            break
        out.append(first + second)
    return out


def _differing(runs: Sequence[RunData]) -> list[str]:
    settings = [run.settings() for run in runs]
    keys = sorted(set().union(*settings))
    return [key for key in keys if len({s.get(key) for s in settings}) > 1]


def _flip(key: str, a: ItemOutcome, b: ItemOutcome) -> Flip:
    return Flip(
        key=key,
        truth=a.truth,
        label_a=a.label,
        label_b=b.label,
        answer_a=a.answer,
        answer_b=b.answer,
        status_a=a.status,
        status_b=b.status,
        right_in="A" if a.correct else "B",
        trajectory_a=a.trajectory,
        trajectory_b=b.trajectory,
    )


def compare_pair(
    a: RunData, b: RunData, letters: tuple[str, str], *, replicates: int, seed: int
) -> PairResult:
    """A and B (same task) on their common items."""
    common = sorted(set(a.items) & set(b.items))
    if not common:
        raise ConfigError(
            f"runs {letters[0]} ({a.where}) and {letters[1]} ({b.where}) of task {a.task} share no item; "
            "compare runs of the same questions"
        )
    for key in common:
        if a.items[key].truth != b.items[key].truth:
            raise ConfigError(
                f"item {key} has truth {a.items[key].truth} in {a.where} but {b.items[key].truth} in "
                f"{b.where}: the runs used different data; compare runs of the same dataset"
            )
    truth = [a.items[k].truth for k in common]
    pred_a = [a.items[k].label for k in common]
    pred_b = [b.items[k].label for k in common]
    right_a = [a.items[k].correct for k in common]
    right_b = [b.items[k].correct for k in common]
    a_only = sum(x and not y for x, y in zip(right_a, right_b, strict=True))
    b_only = sum(y and not x for x, y in zip(right_a, right_b, strict=True))
    both = sum(x and y for x, y in zip(right_a, right_b, strict=True))
    return PairResult(
        task=a.task,
        metric_name=a.metric_name,
        a=letters[0],
        b=letters[1],
        n_common=len(common),
        only_a=len(a.items) - len(common),
        only_b=len(b.items) - len(common),
        metric_a=score(truth, pred_a, a.metric_name),
        metric_b=score(truth, pred_b, a.metric_name),
        difference=paired_bootstrap(truth, pred_a, pred_b, a.metric_name, replicates=replicates, seed=seed),
        both_right=both,
        both_wrong=len(common) - both - a_only - b_only,
        a_only_right=a_only,
        b_only_right=b_only,
        p_value=mcnemar_exact(a_only, b_only) if a.metric_name == "accuracy" else None,
        flips=[_flip(k, a.items[k], b.items[k]) for k in common if a.items[k].correct != b.items[k].correct],
        hits=_hits(a, b, common),
    )


def _hits(a: RunData, b: RunData, common: list[str]) -> HitPair | None:
    both = [(a.items[k].hit, b.items[k].hit) for k in common]
    pairs = [(x, y) for x, y in both if x is not None and y is not None]
    if not pairs:
        return None
    a_only = sum(x and not y for x, y in pairs)
    b_only = sum(y and not x for x, y in pairs)
    return HitPair(
        n=len(pairs),
        rate_a=sum(bool(x) for x, _ in pairs) / len(pairs),
        rate_b=sum(bool(y) for _, y in pairs) / len(pairs),
        a_only=a_only,
        b_only=b_only,
        p_value=mcnemar_exact(a_only, b_only),
    )


def compare_runs(runs: Sequence[RunData], *, replicates: int = 1000, seed: int = 0) -> Comparison:
    """Every pair of runs of the same task, in the order given (the earlier run is A)."""
    if len(runs) < 2:
        raise ConfigError(f"a comparison needs at least two runs, got {len(runs)}; pass two or more")
    letters = _letters(len(runs))
    differs = _differing(runs)
    entries = [
        RunEntry(
            letter=letter,
            name=run.name,
            where=run.where,
            run_id=run.run_id,
            task=run.task,
            metric_name=run.metric_name,
            n_items=len(run.items),
            metric=_metric(run),
            cost_per_item=run.cost_usd / len(run.items) if run.cost_usd is not None and run.items else None,
            differs={key: run.settings().get(key, "-") for key in differs},
        )
        for letter, run in zip(letters, runs, strict=True)
    ]
    by_task: dict[str, list[int]] = {}
    for i, run in enumerate(runs):
        by_task.setdefault(run.task, []).append(i)
    pairs = [
        compare_pair(runs[i], runs[j], (letters[i], letters[j]), replicates=replicates, seed=seed)
        for indices in by_task.values()
        for i, j in itertools.combinations(indices, 2)
    ]
    if not pairs:
        raise ConfigError(
            f"no two runs share a task (tasks: {', '.join(sorted(by_task))}); compare runs of the same task"
        )
    tested = [pair for pair in pairs if pair.p_value is not None]
    holm_applied = len(tested) > 1
    if holm_applied:
        for pair, adjusted in zip(tested, holm([p.p_value or 0.0 for p in tested]), strict=True):
            pair.p_holm = adjusted
    notes = [PAIRED_UNIT, DIRECTION]
    if holm_applied:
        notes.append(
            f"{len(tested)} McNemar tests: p (Holm) is adjusted for multiple comparisons over all of them."
        )
    if any(pair.p_value is None for pair in pairs):
        notes.append(
            "Balanced-accuracy tasks have no McNemar test (it tests accuracy); read their bootstrap interval."
        )
    warnings = version_warnings(runs, letters)
    return Comparison(
        warnings=warnings,
        runs=entries,
        pairs=pairs,
        single=sorted(task for task, indices in by_task.items() if len(indices) == 1),
        replicates=replicates,
        seed=seed,
        holm_applied=holm_applied,
        notes=[*warnings, *notes],
    )


def version_warnings(runs: Sequence[RunData], letters: Sequence[str]) -> list[str]:
    """A line per task whose runs scored different versions of its questions (dataset digests differ,
    giant.data.digest): a paired comparison over edited questions compares different tests. Runs that
    recorded no digest (older ones) are left out."""
    by_task: dict[str, dict[str, list[str]]] = {}
    for letter, run in zip(letters, runs, strict=True):
        if run.dataset_digest:
            by_task.setdefault(run.task, {}).setdefault(run.dataset_digest, []).append(letter)
    return [
        f"Warning: the runs of {task} scored {len(seen)} different versions of its questions ("
        + "; ".join(f"{', '.join(names)}: dataset digest {digest}" for digest, names in sorted(seen.items()))
        + ")."
        for task, seen in sorted(by_task.items())
        if len(seen) > 1
    ]


def _metric(run: RunData) -> float:
    items = list(run.items.values())
    if not items:
        return 0.0
    return score([o.truth for o in items], [o.label for o in items], run.metric_name)
