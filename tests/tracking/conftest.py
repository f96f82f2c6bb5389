"""A real MLflow sqlite store in tmp_path, with the global tracking URI restored afterwards; a synthetic
slide for the trajectory pages' episodes (tests/helpers/episodes.py); a finished job folder for the
traces' and the review's tests (tests/tracking/traced.py), built once."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pytest


@pytest.fixture
def mlflow_store(
    tmp_path: Path, empty_store_db: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, str]]:
    """(tracking URI, id of experiment "giant") of a fresh store; artifacts stay inside tmp_path."""
    db = tmp_path / "mlflow.db"
    shutil.copyfile(empty_store_db, db)
    uri = f"sqlite:///{db}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    mlflow.set_tracking_uri(uri)
    exp_id = mlflow.MlflowClient().create_experiment(
        "giant", artifact_location=(tmp_path / "artifacts").as_uri()
    )
    yield uri, exp_id
    mlflow.set_tracking_uri(None)


@pytest.fixture(scope="session")
def slide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from giant.wsi.synthetic import write_synthetic_slide

    return write_synthetic_slide(tmp_path_factory.mktemp("slide") / "s.svs", 3000, 2000, seed=3)


@pytest.fixture(scope="session")
def job_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.tracking.traced import traced_job

    return traced_job(tmp_path_factory.mktemp("traced_job"))
