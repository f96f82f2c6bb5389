"""read_job: one finished job from its folder or from its MLflow run (a real sqlite store), the same
record either way; anything else one line naming the source and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from giant.config import TrackingSettings, shipped
from giant.errors import ConfigError
from giant.record import JobLayout, ResultRecord, write_resolved_config, write_results, write_summary
from giant.record.read import read_job
from giant.tracking.job_runs import MlflowRuns
from giant.tracking.names import OUTPUT_DIR_TAG, SOURCE_START_TAG
from tests.tracking.test_metric_names_pinned import full_summary

ANSWERED: dict = {"truth": 1, "status": "answered"}
CONFIG = {"agent": {"mode": "giant", "max_steps": 5}, "provider": {"name": "random"}}


def _job(folder: Path) -> Path:
    records = [
        ResultRecord(key=f"t/{i}", benchmark="t", run_index=0, seed=0, prediction=None, label=i, **ANSWERED)
        for i in range(3)
    ]
    folder.mkdir()
    write_results(JobLayout(folder).results, records)
    write_summary(folder, full_summary())
    write_resolved_config(folder, CONFIG)
    return folder


def _tracking(tmp_path: Path) -> TrackingSettings:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    return shipped(TrackingSettings, uri=uri, experiment="giant", enabled=True)


def _logged(tracking: TrackingSettings, folder: Path, *, start: str = "") -> str:
    """A run that logged `folder` as a job does: its tag and its record's artifacts."""
    runs = MlflowRuns(tracking)
    client, experiment_id = runs._open()
    tags = {OUTPUT_DIR_TAG: str(folder.resolve())} | ({SOURCE_START_TAG: start} if start else {})
    run_id = client.create_run(experiment_id, tags=tags).info.run_id
    layout = JobLayout(folder)
    client.log_artifact(run_id, str(layout.results))
    client.log_artifact(run_id, str(layout.summary))
    client.log_artifact(run_id, str(layout.resolved_config), "config")
    return run_id


def test_a_folder_and_its_run_give_the_same_record(tmp_path: Path) -> None:
    folder = _job(tmp_path / "job")
    alone = read_job(str(folder), None)
    assert alone.folder == folder.resolve() and alone.run is None and alone.tags == {}
    assert [r.label for r in alone.records] == [0, 1, 2] and alone.config == CONFIG
    assert alone.summary == full_summary()

    tracking = _tracking(tmp_path)
    run_id = _logged(tracking, folder, start="1234")
    attached = read_job(str(folder), MlflowRuns(tracking))
    assert attached.run is not None and attached.run.run_id == run_id and attached.run.start_time == 1234
    downloaded = read_job(run_id, MlflowRuns(tracking))
    assert downloaded.folder is None and downloaded.run == attached.run
    assert (downloaded.records, downloaded.summary) == (alone.records, alone.summary)
    assert downloaded.config == CONFIG


def test_what_is_not_a_finished_job_is_one_line(tmp_path: Path) -> None:
    tracking = _tracking(tmp_path)
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    cases = {
        str(tmp_path / "nowhere"): "no such job folder, and not an MLflow run id",
        str(unfinished): "results.jsonl, summary.json, resolved_config.json missing",
        "0" * 32: f"no such MLflow run at {tracking.uri}",
    }
    for where, why in cases.items():
        with pytest.raises(ConfigError) as caught:
            read_job(where, MlflowRuns(tracking))
        assert why in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(ConfigError, match=r"needs tracking\.enabled=true"):
        read_job("0" * 32, None)
    folder = _job(tmp_path / "job")
    client = MlflowClient(tracking.uri)
    run_id = client.create_run(_opened(tracking)).info.run_id  # a run that never logged its record
    with pytest.raises(ConfigError, match=r"the run has no results\.jsonl artifact"):
        read_job(run_id, MlflowRuns(tracking))
    assert read_job(str(folder), MlflowRuns(tracking)).run is None  # no run logged this folder


def _opened(tracking: TrackingSettings) -> str:
    return MlflowRuns(tracking)._open()[1]
