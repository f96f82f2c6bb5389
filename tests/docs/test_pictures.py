"""The front page's two pictures, taken by the tests' headless Chromium from a real job.

One demo job through the CLI (`scripts/run_eval.py`, the offline `random` provider, T=5), then its
run report and one trajectory page opened in Chromium: both load without script errors and show the
job's items and steps. The screenshots go to $GIANT_PICTURES when set (`make pictures` points it at
docs/images/, where README.md and the site show them), else into the test's tmp folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from giant.record import JobLayout, read_results
from tests.browser import open_page, serve

ROOT = Path(__file__).resolve().parents[2]
VIEWPORT = {"width": 1280, "height": 900}


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> JobLayout:
    tmp = tmp_path_factory.mktemp("pictures")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "GIANT_", "HYDRA_"))}
    env.update(GIANT_CACHE_DIR=str(tmp / "cache"), GIANT_OUTPUT_DIR=str(tmp / "outputs"))
    out = tmp / "job"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "run_eval.py"),
            "provider=random",
            "dataset=demo",
            "dataset.benchmark=demo_shapes",
            "agent.max_steps=5",
            "limit=6",
            f"tracking.uri=sqlite:///{tmp / 'mlflow.db'}",
            f"hydra.run.dir={out}",
        ],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return JobLayout(out)


def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("GIANT_PICTURES", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def screenshot(page: Any, path: Path) -> None:
    """A viewport screenshot in 256 colours: a slide picture drops from ~1 MB to a few hundred kB,
    which is what a repository should carry."""
    page.screenshot(path=str(path))
    with Image.open(path) as shot:
        shot.convert("RGB").quantize(256).save(path, optimize=True)


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_the_run_report_picture(browser: Any, job: JobLayout, tmp_path: Path) -> None:
    records = read_results(job.results)
    with serve(job.out_dir) as base, open_page(browser, f"{base}/report.html", **VIEWPORT) as opened:
        page = opened.page
        assert page.locator("#items tbody tr").count() == len(records) == 6
        assert "demo_shapes" in page.inner_text("body")
        path = shots(tmp_path) / "report.png"
        screenshot(page, path)
        assert opened.errors == []
    assert path.stat().st_size > 20_000


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_the_trajectory_picture(browser: Any, job: JobLayout, tmp_path: Path) -> None:
    record = max(read_results(job.results), key=lambda r: r.crops)
    assert record.trajectory is not None and record.crops >= 1
    page_path = f"{record.trajectory}/trajectory.html"
    with serve(job.out_dir) as base, open_page(browser, f"{base}/{page_path}", **VIEWPORT) as opened:
        page = opened.page

        images = page.locator("img")
        assert images.count() >= 2  # the overview and at least one crop
        widths = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.naturalWidth)")
        assert all(w > 0 for w in widths), widths  # every image beside the page loaded and decoded
        page.locator("h2", has_text="Overview and crops").evaluate("h => h.scrollIntoView()")
        path = shots(tmp_path) / "trajectory.png"
        screenshot(page, path)
        assert opened.errors == []
    assert path.stat().st_size > 20_000
