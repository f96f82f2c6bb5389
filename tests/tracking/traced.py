"""A finished job folder (the random provider on real synthetic slides, run in-process) and a job
run to trace it into: the traces' and the review's tests share them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import mlflow
import pytest

from giant.tracking.mlflow_logger import JobRun
from giant.tracking.names import JOB_ROLE, ROLE_TAG
from tests.eval.runner_fixtures import SLIDES, evaluate, make_items, random_provider, write_slides

N_ITEMS = 3


@pytest.fixture(scope="module")
def job_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """N_ITEMS items, one run each."""
    root = tmp_path_factory.mktemp("traced_job")
    wsi = write_slides(root / "wsi", SLIDES)
    out = root / "out"
    asyncio.run(evaluate(make_items(N_ITEMS, SLIDES), wsi, random_provider(), out))
    return out


def new_job(uri: str, experiment_id: str, tags: dict[str, str] | None = None) -> JobRun:
    """A job's MLflow run (tagged as one), with the settings the traces read: the store's URI."""
    client = mlflow.MlflowClient(uri)
    run_id = client.create_run(experiment_id, tags={ROLE_TAG: JOB_ROLE, **(tags or {})}).info.run_id
    settings: Any = SimpleNamespace(tracking=SimpleNamespace(uri=uri))
    return JobRun(client, run_id, settings)
