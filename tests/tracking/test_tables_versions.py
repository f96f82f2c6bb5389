"""The tables and the versions of a task's questions (giant.data.digest): runs side by side that scored
different versions are named in one line; a prompt wording of its own is a row of its own. A real MLflow
sqlite store, filled as scripts/run_eval.py logs jobs."""

from __future__ import annotations

import mlflow

from giant.tracking.names import DATASET_DIGEST_TAG
from giant.tracking.tables.formats import to_markdown
from giant.tracking.tables.load import load_runs
from giant.tracking.tables.rows import build_table
from tests.helpers.runs import log_job


def _tag(run_id: str, digest: str) -> None:
    mlflow.MlflowClient().set_tag(run_id, DATASET_DIGEST_TAG, digest)


def test_rows_side_by_side_over_different_versions_warn(mlflow_store: tuple[str, str]) -> None:
    _, exp = mlflow_store
    _tag(log_job(exp, task="cohort", mean=0.5, std=0.1), "aaaa")  # replaced by the next run of its row
    newer = log_job(exp, task="cohort", mean=0.6, std=0.1)
    _tag(newer, "bbbb")
    other = log_job(exp, task="cohort", model="gpt-4.1", mean=0.4, std=0.1)
    _tag(other, "cccc")
    _tag(log_job(exp, task="tcga", mean=0.3, std=0.1), "dddd")
    _tag(log_job(exp, task="tcga", model="gpt-4.1", mean=0.2, std=0.1), "dddd")
    log_job(exp, task="tcga", model="o3", mean=0.2, std=0.1)  # an older run without a digest: not checked
    [line] = build_table(load_runs()).version_warnings
    assert line.startswith("warning: the cohort cells scored 2 different versions of its questions")
    assert f"bbbb in run(s) {newer}" in line and f"cccc in run(s) {other}" in line and "aaaa" not in line


def test_one_row_per_prompt_wording(mlflow_store: tuple[str, str]) -> None:
    _, exp = mlflow_store
    log_job(exp, task="cohort", mean=0.5, std=0.1)
    log_job(exp, task="cohort", mean=0.7, std=0.1, params={"agent.prompts": "/home/me/terse"})
    table = build_table(load_runs())
    assert [row.method for row in table.rows] == ["giant", "giant [prompts terse]"]
    assert "| giant [prompts terse] | gpt-5 |" in to_markdown(table)
