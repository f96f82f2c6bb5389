"""A whole job as a user runs it (giant.evaluate, the job of scripts/run_eval.py; the openai SDK against
a loopback Responses API, the ledger, a sqlite MLflow store with file artifacts): the images the model
was sent are one file each across the job folder, the ledger, the MLflow run and its traces'
attachments, the pages know their run, and the job stores at most twice the JPEG bytes it sent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

import giant
from giant.record import TRAJECTORY_FILE, TRAJECTORY_PAGE, JobLayout
from giant.storage import is_stored_image
from tests.tracking.responses_peer import responses_peer

T = 4


@pytest.mark.slow
def test_a_job_stores_each_image_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db, cache, out = tmp_path / "mlruns" / "mlflow.db", tmp_path / "cache", tmp_path / "job"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-storage-job")
    settings = ["provider=openai", "provider.reasoning_effort=null", "dataset=demo", f"agent.max_steps={T}"]
    settings += [
        "limit=2",
        "bootstrap_replicates=10",
        f"paths.cache_dir={cache}",
        f"tracking.uri=sqlite:///{db}",
    ]
    with responses_peer(T) as base_url:
        summary = giant.evaluate([*settings, f"provider.base_url={base_url}"], output_dir=out)
    assert summary is not None and summary.complete

    (run,) = MlflowClient(f"sqlite:///{db}").search_runs(experiment_ids=["1"])
    artifacts = Path(run.info.artifact_uri.removeprefix("file://"))
    layout = JobLayout(out)
    folders = [path.parent for path in sorted(layout.trajectories.rglob(TRAJECTORY_FILE))]
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
