"""A job with unmeasured item-runs is no table cell (issue 39): its metric would count a server's or a
slide's failures as the model's. The real loader on a real MLflow sqlite store, the job's metrics as
giant.tracking.mlflow_logger.summary_metrics names them."""

from __future__ import annotations

import pytest

from giant.record.summary import Bootstrap, Provenance, Summary
from giant.tracking.mlflow_logger import summary_metrics
from giant.tracking.tables.formats import to_markdown
from giant.tracking.tables.load import load_runs
from giant.tracking.tables.rows import build_table
from tests.helpers.runs import log_job


def _summary(n_unmeasured: int) -> Summary:
    boot = Bootstrap(point=0.0, mean=0.0, std=0.0, ci_low=0.0, ci_high=0.0, replicates=1000, seed=0)
    return Summary(
        benchmark="tcga",
        metric_name="balanced_accuracy",
        complete=not n_unmeasured,
        n_unmeasured=n_unmeasured,
        setup_causes={"server": n_unmeasured} if n_unmeasured else {},
        n_items=8,
        n_scored=8 - n_unmeasured,
        metric=boot,
        accuracy=0.0,
        balanced_accuracy=0.0,
        provenance=Provenance(run_key="k", config_hash="c0ffee", dataset_hash="da7a"),
    )


def test_a_job_with_unmeasured_item_runs_is_no_cell_and_is_named(mlflow_store: tuple[str, str]) -> None:
    _, exp = mlflow_store
    measured = log_job(exp, task="tcga", mean=0.3, std=0.03)  # an earlier, fully measured run
    metrics = summary_metrics(_summary(8))  # every item-run failed on a 503: "0.0 ± 0.0" before
    failed = log_job(exp, task="tcga", mean=0.0, std=0.0, status="incomplete", extra=metrics)
    table = build_table(load_runs())
    assert [row.cells["tcga"].run_id for row in table.rows] == [measured]  # the measured run's cell
    assert "0.0 ± 0.0" not in to_markdown(table) and "30.0 ± 3.0" in to_markdown(table)
    assert table.left_out == [
        f"run {failed} (tcga, giant, gpt-5) is no cell: 8 of 8 item-runs unmeasured (its incomplete_reason "
        "tag says why); rerun its command to measure them"
    ]


@pytest.mark.parametrize("n_unmeasured", [0, 1])
def test_only_unmeasured_item_runs_leave_a_job_out(mlflow_store: tuple[str, str], n_unmeasured: int) -> None:
    _, exp = mlflow_store
    log_job(exp, task="tcga", mean=0.25, std=0.03, extra=summary_metrics(_summary(n_unmeasured)))
    table = build_table(load_runs())
    assert len(table.rows) == (0 if n_unmeasured else 1) and len(table.left_out) == n_unmeasured
