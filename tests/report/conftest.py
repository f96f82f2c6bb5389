"""Two job folders built once per session and read by the report's tests (a test that writes works on
a copy): a fault-injected job (real synthetic slides, the real runner and agent, the trajectory pages,
and report.html written from the folder), and a job whose slides were each looked at several times
(tests/report/overview_job.py)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from giant.record import JobLayout
from giant.report import write_report
from giant.tracking.viewer import write_job_pages
from tests.eval.runner_fixtures import SLIDES, evaluate, write_slides
from tests.report.faults import FaultPlanProvider, make_items
from tests.report.overview_job import overview_job


class FaultedJob:
    def __init__(self, layout: JobLayout, provider: FaultPlanProvider, wsi_root: Path) -> None:
        self.layout = layout
        self.provider = provider
        self.wsi_root = wsi_root


@pytest.fixture(scope="session")
def faulted(tmp_path_factory: pytest.TempPathFactory) -> FaultedJob:
    root = tmp_path_factory.mktemp("faulted")
    wsi_root = write_slides(root / "wsi", SLIDES)
    provider = FaultPlanProvider()
    out = root / "job"
    # In a thread of its own: Playwright's sync API keeps an event loop running in this one.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, evaluate(make_items(), wsi_root, provider, out, concurrency=4)).result()
    write_job_pages(out)
    write_report(out)
    return FaultedJob(JobLayout(out), provider, wsi_root)


@pytest.fixture(scope="session")
def overviews(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of overview_job: two slides, each item run RUNS times, one slide annotated."""
    return overview_job(tmp_path_factory.mktemp("overviews"))
