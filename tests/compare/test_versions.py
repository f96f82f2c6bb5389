"""A comparison over runs that scored different versions of a task's questions says so in one line
(giant.compare.pairs.version_warnings), in its notes and on the console (scripts/compare.py)."""

from __future__ import annotations

from giant.compare.pairs import version_warnings
from giant.compare.sources import ItemOutcome, RunData


def _run(task: str, digest: str) -> RunData:
    item = ItemOutcome(key=f"{task}/1", truth=1, label=1, answer="1", status="answered", trajectory=None)
    return RunData(
        where=f"/jobs/{digest}",
        task=task,
        metric_name="accuracy",
        runs_per_item=1,
        tie_rule="lowest_run_index",
        config={},
        items={item.key: item},
        dataset_digest=digest,
    )


def test_different_versions_of_a_task_are_one_line() -> None:
    runs = [_run("cohort", "aaaa"), _run("cohort", "aaaa"), _run("cohort", "bbbb"), _run("tcga", "cccc")]
    assert version_warnings(runs, ["A", "B", "C", "D"]) == [
        "Warning: the runs of cohort scored 2 different versions of its questions "
        "(A, B: dataset digest aaaa; C: dataset digest bbbb)."
    ]


def test_runs_without_a_digest_are_not_checked() -> None:
    assert version_warnings([_run("cohort", "aaaa"), _run("cohort", "")], ["A", "B"]) == []
