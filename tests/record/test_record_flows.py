"""The record flows forward: a fresh job's runner returns its records, trajectories and summary, and
everything made after it (predictions.csv, the confusion matrix, the trajectory pages, report.html,
the MLflow run and its traces) is made from that record in memory. Once the runner has returned, the
job's files are opened for reading only to be uploaded to MLflow: results.jsonl and each trajectory
once at most."""

from __future__ import annotations

import builtins
import io
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

import giant
import giant.eval.runner
from giant.record import RESULTS_FILE, TRAJECTORY_FILE, TRAJECTORY_PAGE, JobLayout, read_results, read_summary
from giant.record.layout import PREDICTIONS_FILE, SUMMARY_FILE
from giant.record.read import JobRecord, read_trajectories

WATCHED = {RESULTS_FILE, TRAJECTORY_FILE, SUMMARY_FILE, PREDICTIONS_FILE}


@pytest.mark.slow
def test_a_fresh_job_reads_its_record_once_at_most_after_its_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ended: list[JobRecord] = []
    reads: Counter[Path] = Counter()
    run_eval = giant.eval.runner.run_eval
    real_open = io.open

    async def returning(*args: Any, **kwargs: Any) -> JobRecord:
        record = await run_eval(*args, **kwargs)
        ended.append(record)
        return record

    def counting(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        path = Path(str(file)) if isinstance(file, str | Path) else None
        if ended and path is not None and path.name in WATCHED and not set(mode) & set("wax+"):
            reads[path.resolve()] += 1
        return real_open(file, mode, *args, **kwargs)

    opener: Callable[..., Any] = counting
    monkeypatch.setattr(giant.eval.runner, "run_eval", returning)
    monkeypatch.setattr(io, "open", opener)  # pathlib opens through io.open
    monkeypatch.setattr(builtins, "open", opener)  # shutil, pandas and the rest through open()
    out = tmp_path / "job"
    summary = giant.evaluate(
        [
            "dataset=demo",
            "dataset.benchmark=demo_count",  # balanced accuracy: a confusion matrix too
            "provider=random",
            "limit=4",
            "agent.max_steps=3",
            "bootstrap_replicates=20",
            f"paths.cache_dir={tmp_path / 'cache'}",
            f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}",
        ],
        output_dir=out,
    )
    monkeypatch.undo()
    assert ended and summary is not None and summary.n_items == 4

    layout = JobLayout(out)
    trajectories = sorted(layout.trajectories.rglob(TRAJECTORY_FILE))
    assert len(trajectories) == 4
    assert reads[layout.results.resolve()] <= 1, reads
    assert all(reads[path.resolve()] <= 1 for path in trajectories), reads
    assert max(reads.values(), default=0) <= 1, reads  # summary.json and predictions.csv too

    # the record in memory is the folder's: the same lines, trajectories and summary
    (record,) = ended
    records = read_results(layout.results)
    assert record.records == records and len(pd.read_csv(layout.predictions)) == len(records) == 4
    assert record.trajectories == read_trajectories(out, records) and len(record.trajectories) == 4
    assert record.summary == read_summary(out) == summary
    assert layout.confusion_matrix.is_file() and layout.report.is_file()
    assert all((path.parent / TRAJECTORY_PAGE).is_file() for path in trajectories)
    (run,) = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}").search_runs(["1"])
    traces = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}").search_traces(
        locations=["1"], run_id=run.info.run_id, include_spans=False
    )
    assert len(traces) == 4
    assert summary.provenance.dataset_digests is not None  # in the one summary.json written
