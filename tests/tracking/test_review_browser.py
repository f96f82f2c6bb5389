"""What a pathologist sees, checked in headless Chromium against a real `mlflow ui` on 127.0.0.1: a
traced job's trace shows the crop the model was sent inline in its call's span, and the review queue
scripts/review.py made is listed with its traces to do. The screenshots go to $GIANT_PICTURES when set
(`make pictures`: docs/images/, which docs/review.md shows), else into the test's tmp folder."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import mlflow
import pytest
from PIL import Image

from giant.tracking.review import Review, open_review
from giant.tracking.traces import log_traces
from giant.tracking.ui import stop_group
from tests.eval.runner_fixtures import SLIDES, evaluate, make_items, random_provider, write_slides
from tests.tracking.traced import new_job

STARTUP_S = 180  # the UI starts in 20-30 s on a busy 2-core machine
RENDER_MS = 120_000  # its first page renders in tens of seconds there


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _traced_store(root: Path, empty_store_db: Path) -> tuple[str, str, Review]:
    """(tracking URI, experiment id, review) of a two-item job, traced and queued for review."""
    wsi = write_slides(root / "wsi", SLIDES)
    out = root / "out"
    asyncio.run(evaluate(make_items(2, SLIDES), wsi, random_provider(), out))
    db = root / "mlflow.db"
    shutil.copyfile(empty_store_db, db)
    uri = f"sqlite:///{db}"
    client = mlflow.MlflowClient(uri)
    experiment_id = client.create_experiment("giant", artifact_location=(root / "artifacts").as_uri())
    job = new_job(uri, experiment_id)
    log_traces(job, out)
    return uri, experiment_id, open_review(client, job.run_id)


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory, empty_store_db: Path) -> Iterator[tuple[str, str, Review]]:
    """(UI base URL, experiment id, review) of a real MLflow UI over the traced store."""
    root = tmp_path_factory.mktemp("review_ui")
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API may hold this thread's event loop
        uri, experiment_id, review = pool.submit(_traced_store, root, empty_store_db).result()
    port = _free_port()
    command = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri, "--host", "127.0.0.1"]
    command += ["--port", str(port), "--default-artifact-root", str(root / "artifacts")]
    log_path = root / "mlflow_ui.log"
    with log_path.open("w") as log:
        # its own process group: stop_group ends the UI's workers with it (terminate() left them serving)
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + STARTUP_S
            while True:
                try:
                    with urllib.request.urlopen(f"{base}/health", timeout=2):
                        break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        pytest.fail(f"mlflow ui did not start: {log_path.read_text()[-2000:]}")
                    time.sleep(0.3)
            yield base, experiment_id, review
        finally:
            stop_group(server)


def _shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("GIANT_PICTURES", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _screenshot(page: Any, path: Path) -> None:
    """In 256 colours, as the docs' other pictures (tests/docs/test_pictures.py)."""
    page.screenshot(path=str(path))
    with Image.open(path) as shot:
        shot.convert("RGB").quantize(256).save(path, optimize=True)


@pytest.mark.slow
def test_the_trace_shows_the_crop_and_the_queue_its_traces(
    ui: tuple[str, str, Review], browser: Any, tmp_path: Path
) -> None:
    base, experiment_id, review = ui
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        trace_id = review.trace_ids[0]
        page.goto(f"{base}/#/experiments/{experiment_id}/traces?selectedEvaluationId={trace_id}")
        page.get_by_text("call 2", exact=True).first.wait_for(timeout=RENDER_MS)
        page.get_by_text("call 2", exact=True).first.click()  # the call the first crop was sent with
        image = page.locator("img[src^='blob:']").first
        image.wait_for(timeout=RENDER_MS)
        page.wait_for_function("(img) => img.complete && img.naturalWidth > 0", arg=image.element_handle())
        assert page.get_by_text("mpp").first.is_visible()
        _screenshot(page, _shots(tmp_path) / "review_trace.png")

        page.goto(f"{base}/#/experiments/{experiment_id}/review-queue")
        queue = page.get_by_text(review.queue_name, exact=True).first
        queue.wait_for(timeout=RENDER_MS)
        queue.click()
        page.get_by_text("Needs review").first.wait_for(timeout=RENDER_MS)  # its traces, listed
        _screenshot(page, _shots(tmp_path) / "review_queue.png")
    finally:
        page.close()
