"""A finished job folder (the random provider on real synthetic slides, run in-process) and a job
run to trace it into: the traces' and the review's tests share them."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import mlflow

from giant.tracking.mlflow_logger import JobRun
from giant.tracking.names import JOB_ROLE, ROLE_TAG
from tests.eval.runner_fixtures import SLIDES, evaluate, make_items, random_provider, write_slides
from tests.helpers.episodes import apart

N_ITEMS = 3


def traced_job(root: Path) -> Path:
    """N_ITEMS items, one run each, run into `root`/out (the session's `job_dir`, tests/tracking/conftest.py:
    read only)."""
    wsi = write_slides(root / "wsi", SLIDES)
    out = root / "out"
    apart(evaluate(make_items(N_ITEMS, SLIDES), wsi, random_provider(), out))
    return out


def new_job(uri: str, experiment_id: str, tags: dict[str, str] | None = None) -> JobRun:
    """A job's MLflow run (tagged as one), with the settings the traces read: the store's URI."""
    client = mlflow.MlflowClient(uri)
    run_id = client.create_run(experiment_id, tags={ROLE_TAG: JOB_ROLE, **(tags or {})}).info.run_id
    settings: Any = SimpleNamespace(tracking=SimpleNamespace(uri=uri))
    return JobRun(client, run_id, settings)
