"""Runs matched per task on their common items: counts, discordant items, flips, votes, Holm."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from giant.compare.pairs import compare_runs
from giant.compare.render import to_csv, to_html, to_latex, to_markdown
from giant.compare.sources import RunData, outcomes
from giant.compare.stats import holm, mcnemar_exact
from giant.errors import ConfigError
from giant.record import ResultRecord


def _record(key: str, truth: int, label: int | None, run_index: int = 0) -> ResultRecord:
    return ResultRecord(
        key=f"t/{key}",
        benchmark="t",
        run_index=run_index,
        seed=0,
        prediction=None if label is None else f'{{"answer": {label}}}',
        label=label,
        truth=truth,
        correct=label == truth,
        status="answered" if label is not None else "unparseable",
        trajectory=f"trajectories/t__{key}/run{run_index}",
    )


def _run(name: str, labels: dict[str, list[int | None]], *, task: str = "t", truth: int = 1) -> RunData:
    k = len(next(iter(labels.values())))
    records = [
        _record(key, truth, label, i) for key, votes in labels.items() for i, label in enumerate(votes)
    ]
    return RunData(
        where=name,
        task=task,
        metric_name="accuracy",
        runs_per_item=k,
        tie_rule="lowest_run_index",
        config={"agent": {"mode": "giant", "max_steps": k}, "provider": {"model": "m"}, "seed": 0},
        items=outcomes(records, k, "lowest_run_index"),
    )


def test_pairs_on_common_items_with_flips_and_counts() -> None:
    a = _run("a", {"1": [1], "2": [1], "3": [2], "4": [None], "5": [1]})
    b = _run("b", {"1": [1], "2": [2], "3": [1], "4": [1], "6": [1]})
    comparison = compare_runs([a, b], replicates=50)
    [pair] = comparison.pairs
    assert (pair.n_common, pair.only_a, pair.only_b) == (4, 1, 1)
    assert (pair.both_right, pair.a_only_right, pair.b_only_right, pair.both_wrong) == (1, 1, 2, 0)
    assert pair.metric_a == pytest.approx(2 / 4) and pair.metric_b == pytest.approx(3 / 4)
    assert pair.difference.point == pytest.approx(0.25)
    assert pair.p_value == pytest.approx(mcnemar_exact(1, 2))
    assert pair.p_holm is None and not comparison.holm_applied
    flips = {f.key: f.direction for f in pair.flips}
    assert flips == {"t/2": "right -> wrong", "t/3": "wrong -> right", "t/4": "wrong -> right"}
    assert comparison.runs[0].differs == {}  # same settings: nothing named as differing


def test_runs_per_item_above_one_pairs_the_voted_label() -> None:
    """Item 1: votes 2,1,1 -> 1 (right); item 2: 2,None,1 -> tie, lowest run index -> 2 (wrong)."""
    voted = _run("x3", {"1": [2, 1, 1], "2": [2, None, 1]})
    single = _run("x1", {"1": [2], "2": [1]})
    [pair] = compare_runs([single, voted], replicates=20).pairs
    assert pair.metric_a == pytest.approx(0.5) and pair.metric_b == pytest.approx(0.5)
    assert {f.key: f.right_in for f in pair.flips} == {"t/1": "B", "t/2": "A"}
    assert [f.answer_b for f in pair.flips] == ['{"answer": 1}', '{"answer": 2}']
    assert [f.trajectory_b for f in pair.flips] == ["trajectories/t__1/run1", "trajectories/t__2/run0"]


def test_three_runs_two_tasks_holm_over_every_test() -> None:
    a = _run("a", {"1": [1], "2": [2], "3": [2]})
    b = _run("b", {"1": [1], "2": [1], "3": [1]})
    c = _run("c", {"1": [2], "2": [1], "3": [2]})
    other = _run("d", {"1": [1]}, task="u")
    comparison = compare_runs([a, b, c, other], replicates=20)
    assert [(p.a, p.b) for p in comparison.pairs] == [("A", "B"), ("A", "C"), ("B", "C")]
    assert comparison.single == ["u"]
    raw = [p.p_value for p in comparison.pairs]
    assert [p.p_holm for p in comparison.pairs] == pytest.approx(holm([v or 0.0 for v in raw]))
    assert comparison.holm_applied and any("Holm" in note for note in comparison.notes)


def test_no_shared_task_or_item_is_one_line() -> None:
    with pytest.raises(ConfigError, match="no two runs share a task"):
        compare_runs([_run("a", {"1": [1]}), _run("b", {"1": [1]}, task="u")])
    with pytest.raises(ConfigError, match="share no item"):
        compare_runs([_run("a", {"1": [1]}), _run("b", {"2": [1]})])
    with pytest.raises(ConfigError, match="different data"):
        compare_runs([_run("a", {"1": [1]}), _run("b", {"1": [1]}, truth=2)])
    with pytest.raises(ConfigError, match="at least two"):
        compare_runs([_run("a", {"1": [1]})])


def test_rendered_files_name_failures_and_escape_html() -> None:
    a = _run("a", {"1": [1], "2": [None]})
    b = _run("b", {"1": [None], "2": [1]})
    b.items["t/2"] = b.items["t/2"].model_copy(update={"answer": "<script>alert(1)</script> grade 1"})
    comparison = compare_runs([a, b], replicates=20)
    md = to_markdown(comparison)
    assert '| t/1 | right -> wrong | 1 | 1: {"answer": 1} | none (unparseable) |' in md
    page = to_html(comparison)
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt; grade 1" in page
    rows = list(csv.DictReader(io.StringIO(to_csv(comparison))))
    assert [(r["a_right_only"], r["b_right_only"], r["mcnemar_p"]) for r in rows] == [("1", "1", "1")]
    assert "\\begin{tabular}" in to_latex(comparison) and "A vs B" in to_latex(comparison)


def test_fetch_trajectory_copies_the_page_not_the_request_log(tmp_path: Path) -> None:
    job = tmp_path / "job"
    folder = job / "trajectories" / "t__1" / "run0"
    folder.mkdir(parents=True)
    for name in ("trajectory.json", "trajectory.html", "ab12.jpg", "requests.jsonl"):
        (folder / name).write_text(name)
    run = _run("a", {"1": [1]}).model_copy(update={"folder": job})
    target = tmp_path / "out" / "A" / "t__1" / "run0"
    assert run.fetch_trajectory("trajectories/t__1/run0", target)
    assert sorted(p.name for p in target.iterdir()) == ["ab12.jpg", "trajectory.html", "trajectory.json"]
    assert not run.fetch_trajectory("trajectories/t__2/run0", tmp_path / "none")  # no folder, no run id
