"""trajectory.html opened the way a researcher opens it from MLflow: a real `mlflow ui` on 127.0.0.1
over a sqlite store (the session's, tests/helpers/ui.py), the run's Artifacts tab in headless
Chromium, the page inside the UI's sandboxed blob: iframe; once with the artifacts in a folder
(written directly, images linked) and once uploaded to the server (the copy path). The page embeds no
image, so every image there must come from the server (get-artifact) and decode."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from giant.record import TRAJECTORIES_DIR, JobLayout, trajectory_dir
from giant.record.trajectory import Trajectory
from giant.tracking.mlflow_logger import JobRun
from giant.tracking.viewer import write_html
from tests.browser import open_page
from tests.helpers.episodes import scripted_episode
from tests.helpers.store import DemoStore
from tests.helpers.ui import Ui

PAGE = f"{trajectory_dir('demo/1', 0)}/trajectory.html"

# Each image the page shows, loaded again by URL inside the page's own frame: an <img>'s decode, and
# for the overview (an SVG <image>) a fresh Image() on its href.
IMAGES = """async () => Promise.all([...document.querySelectorAll("[data-image]")].map(async (el) => {
  const url = el.getAttribute(el.localName === "img" ? "src" : "href");
  const probe = new Image();
  probe.src = url;
  const width = await probe.decode().then(() => probe.naturalWidth, () => 0);
  return {tag: el.localName, url, width, shown: el.localName === "img" ? el.naturalWidth : width};
}))"""


@pytest.fixture
def mlflow_ui(demo_ui: Ui, demo_store: DemoStore) -> tuple[str, str]:
    """(UI base URL, tracking URI) of the session's MLflow UI over its demo store: each test makes an
    experiment of its own there; uploads to `mlflow-artifacts:` land in the UI's folder."""
    return demo_ui.base, demo_store.uri


def _blob_frame(page: Any, timeout_s: float = 60) -> Any:
    """The UI's iframe that shows the HTML artifact (a blob: document)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for frame in page.frames:
            if frame.url.startswith("blob:"):
                return frame
        page.wait_for_timeout(250)  # lets Playwright deliver the page's events
    pytest.fail(f"no blob: iframe in the artifact view; frames: {[f.url for f in page.frames]}")


def _logged_episode(
    client: MlflowClient, experiment: str, slide_path: Path, tmp_path: Path
) -> tuple[str, Trajectory]:
    """A scripted episode's folder written and logged to a new run of `experiment`, as a job does."""
    run_id = client.create_run(experiment).info.run_id
    layout = JobLayout(tmp_path / "job")
    folder = layout.trajectory("demo/1", 0)
    traj = scripted_episode(slide_path, folder, tmp_path)  # on a thread: Playwright holds this one's loop
    write_html(folder, truth="2", correct=True, mlflow_run_id=run_id)
    job = JobRun(client, run_id, settings=None)  # type: ignore[arg-type]  # logging needs no settings
    job.log_artifacts({}, {TRAJECTORIES_DIR: layout.trajectories})
    return run_id, traj


def _shown_in_mlflow(browser: Any, base: str, experiment: str, run_id: str, shot: Path) -> tuple[Any, str]:
    """The images (IMAGES) and text of the page as the run's Artifacts tab shows it."""
    url = f"{base}/#/experiments/{experiment}/runs/{run_id}/artifacts/{PAGE}"
    with open_page(browser, url) as opened:
        frame = _blob_frame(opened.page)
        frame.wait_for_selector("svg.overview", timeout=30_000)
        images, text = frame.evaluate(IMAGES), frame.evaluate("() => document.body.innerText")
        opened.page.screenshot(path=str(shot))
    return images, text


@pytest.mark.slow
@pytest.mark.parametrize("store", ["file", "uploaded"])
def test_the_page_loads_its_images_inside_mlflows_artifact_view(
    browser: Any,
    mlflow_ui: tuple[str, str],
    slide: Path,
    tmp_path: Path,
    store: str,
) -> None:
    """`file`: a folder beside the sqlite store, written directly with the images linked (the
    default); `uploaded`: a tracking server that keeps uploads itself (`mlflow-artifacts:`)."""
    base, uri = mlflow_ui
    if store == "file":
        client = MlflowClient(uri)
        experiment = client.create_experiment(
            f"{store}-{tmp_path.name}", artifact_location=(tmp_path / "artifacts").as_uri()
        )
    else:
        client = MlflowClient(base)
        experiment = client.create_experiment(
            f"{store}-{tmp_path.name}", artifact_location=f"mlflow-artifacts:/{tmp_path.name}"
        )
    run_id, traj = _logged_episode(client, experiment, slide, tmp_path)
    logged = Path(client.download_artifacts(run_id, PAGE, str(tmp_path / "downloaded")))
    jpeg = sum(
        (tmp_path / "job" / trajectory_dir("demo/1", 0) / r.image).stat().st_size for r in traj.regions
    )
    assert logged.stat().st_size < jpeg / 4  # the logged page names its images, embeds none

    images, text = _shown_in_mlflow(browser, base, experiment, run_id, tmp_path / "mlflow_artifact_view.png")
    assert len(images) == len(traj.regions)  # the overview and every crop
    for image in images:
        assert image["url"].startswith(f"{base}/get-artifact?run_uuid={run_id}&path="), image
        assert image["width"] > 0 and image["shown"] > 0, image  # fetched from the server and decoded
    assert "correct" in text and "<script>alert('x')</script>" in text  # model text shown, not run
