"""A whole job as a user runs it (scripts/run_eval.py in a subprocess, the openai SDK against a loopback
Responses API, the ledger, a sqlite MLflow store with file artifacts): the images the model was sent
are one file each across the job folder, the ledger, the MLflow run and its traces' attachments, the
pages know their run, and the job stores at most twice the JPEG bytes it sent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from giant.record import TRAJECTORY_PAGE, JobLayout
from giant.storage import is_stored_image
from tests.tracking.responses_peer import responses_peer

ROOT = Path(__file__).resolve().parents[2]
T = 4


@pytest.mark.slow
def test_a_job_stores_each_image_once(tmp_path: Path) -> None:
    db, cache, out = tmp_path / "mlruns" / "mlflow.db", tmp_path / "cache", tmp_path / "job"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "GIANT_", "HYDRA_"))}
    env.update(
        OPENAI_API_KEY="sk-test-storage-job",
        GIANT_CACHE_DIR=str(cache),
        MLFLOW_TRACKING_URI=f"sqlite:///{db}",
    )
    settings = ["provider=openai", "provider.reasoning_effort=null", "dataset=demo", f"agent.max_steps={T}"]
    settings += ["limit=2", "bootstrap_replicates=10", f"hydra.run.dir={out}"]
    with responses_peer(T) as base_url:
        done = subprocess.run(
            [
                sys.executable,
                str(ROOT / "scripts" / "run_eval.py"),
                *settings,
                f"provider.base_url={base_url}",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-3000:]

    (run,) = MlflowClient(f"sqlite:///{db}").search_runs(experiment_ids=["1"])
    artifacts = Path(run.info.artifact_uri.removeprefix("file://"))
    layout = JobLayout(out)
    folders = layout.trajectory_folders()
    assert len(folders) == 2
    jpeg = 0
    for folder in folders:
        images = [path for path in folder.iterdir() if is_stored_image(path)]
        assert len(images) == T  # the overview and T-1 crops
        for image in images:
            logged = artifacts / image.relative_to(out)
            assert os.path.samefile(image, cache / "ledger" / "images" / image.name)
            assert os.path.samefile(image, logged)
            jpeg += image.stat().st_size
        page = (folder / TRAJECTORY_PAGE).read_text(encoding="utf-8")
        assert f'data-mlflow-run="{run.info.run_id}"' in page and "base64" not in page

    # the traces (on by default): one per item-run, each image attached as a link to the job's copy
    client = MlflowClient(f"sqlite:///{db}")
    traces = client.search_traces(locations=["1"], run_id=run.info.run_id, include_spans=False)
    assert len(traces) == 2
    store = artifacts.parents[1]  # the experiment's artifact root: the run's artifacts and the traces'
    attached = [path for path in store.rglob("attachments/*") if path.is_file()]
    assert len(attached) == 2 * T
    assert all(path.stat().st_nlink > 1 for path in attached)  # a link, not a second copy

    sizes = {}
    for path in [*out.rglob("*"), *(cache / "ledger").rglob("*"), *store.rglob("*")]:
        if path.is_file():
            sizes[(path.stat().st_dev, path.stat().st_ino)] = path.stat().st_size
    assert sum(sizes.values()) <= 2 * jpeg, f"{sum(sizes.values())} bytes stored for {jpeg} JPEG bytes sent"
