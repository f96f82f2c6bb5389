"""From sweep to comparison, as a researcher meets it: a real `-m` sweep through the CLI (two tasks x two
step limits, the offline random provider) ends with its table, plot, MLflow address and compare.py
commands, and logs table and plot on its parent run; `make ui`'s command (giant.tracking.ui) prints
its addresses only once the UI answers, without Starlette's warning; the sweep's address opens, in
headless Chromium, on the sweep's job runs with the swept setting, the task, the metric, its interval
and dollars as columns, and on a chart of the metric against the step limit.

The screenshots go to $GIANT_PICTURES when set (`make pictures`: docs/images/, shown by the guide
docs/mlflow_sweeps.md), else into the test's tmp folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from mlflow.tracking import MlflowClient

from giant.tracking.names import PARENT_TAG, ROLE_TAG, SWEEP_ID_TAG
from giant.tracking.sweep_result import PLOT, TABLES_DIR
from giant.tracking.ui import stop_group
from giant.tracking.view import SECTION, jobs_filter
from tests.browser import open_page
from tests.docs.test_pictures import screenshot, shots
from tests.tracking.test_storage_mlflow_ui import STARTUP_S, _free_port

ROOT = Path(__file__).resolve().parents[2]
VIEWPORT = {"width": 1920, "height": 900}  # wide enough that the grid renders every view column
TASKS = ("demo_shapes", "demo_count")
STEPS = ("1", "3")
HEADERS = "() => [...document.querySelectorAll('[role=columnheader]')].map(e => e.innerText.trim())"
FRESH = {"width": 1366, "height": 768}  # a laptop screen, a new browser profile: MLflow's panels as they open
# The `metric` column's header and its first value, where the page lays them out (ag-grid renders only
# the columns in view: a column pushed off-screen is not found)
METRIC_PLACE = """() => {
  const heads = [...document.querySelectorAll('[role=columnheader]')];
  const head = heads.find(e => e.innerText.trim() === 'metric');
  if (!head) return null;
  const id = head.getAttribute('col-id');
  const cell = document.querySelector(`[role=gridcell][col-id="${id}"]`);
  const rect = (e) => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  return {head: rect(head), cell: cell ? rect(cell) : null, value: cell ? cell.innerText.trim() : null,
          width: window.innerWidth, height: window.innerHeight};
}"""


class Sweep(NamedTuple):
    uri: str
    sweep_dir: Path
    stdout: str
    sweep_id: str
    experiment_id: str


class Ui(NamedTuple):
    base: str
    printed: list[str]  # what the command printed up to and including its last address line
    answered_when_printed: bool


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory, empty_store_db: Path) -> Sweep:
    tmp = tmp_path_factory.mktemp("sweep_view")
    db = tmp / "mlflow.db"
    shutil.copyfile(empty_store_db, db)
    uri, sweep_dir = f"sqlite:///{db}", tmp / "sweep"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "GIANT_", "HYDRA_"))}
    env.update(GIANT_CACHE_DIR=str(tmp / "cache"), GIANT_OUTPUT_DIR=str(tmp / "outputs"))
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "run_eval.py"),
            "-m",
            "provider=random",
            "dataset=demo",
            f"dataset.benchmark={','.join(TASKS)}",
            f"agent.max_steps={','.join(STEPS)}",
            "limit=4",
            f"tracking.uri={uri}",
            f"hydra.sweep.dir={sweep_dir}",
        ],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    client = MlflowClient(uri)
    (parent,) = client.search_runs(
        [client.get_experiment_by_name("giant").experiment_id], f"tags.`{ROLE_TAG}` = 'sweep'"
    )
    return Sweep(uri, sweep_dir, proc.stdout, parent.info.run_id, parent.info.experiment_id)


@pytest.fixture(scope="module")
def ui(sweep: Sweep, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ui]:
    """`make ui`'s command over the sweep's store, read until it prints the sweep's chart address."""
    port = str(_free_port())
    base = f"http://127.0.0.1:{port}"
    artifacts = tmp_path_factory.mktemp("ui_artifacts")
    command = [sys.executable, "-m", "giant.tracking.ui", sweep.uri, str(artifacts), "127.0.0.1", port]
    # its own process group, so that nothing of it outlives the module; it stops its UI's own group
    server = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    printed: list[str] = []
    answered = False
    try:
        deadline = time.monotonic() + STARTUP_S
        assert server.stdout is not None
        for line in server.stdout:
            printed.append(line.rstrip("\n"))
            if "http" in line and "starting" not in line and len(printed) and not answered:
                answered = _answers(base)  # the first address printed: the UI must answer it already
            if "charts" in line or time.monotonic() > deadline:
                break
        yield Ui(base, printed, answered)
    finally:
        stop_group(server)


def _answers(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/health", timeout=5):
            return True
    except OSError:
        return False


def _address(ui: Ui, start: str) -> str:
    (line,) = [line for line in ui.printed if line.startswith(f"make ui: {start}")]
    return line.rsplit(": ", 1)[1]


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_the_sweep_ends_with_its_result(sweep: Sweep) -> None:
    out = sweep.stdout
    client = MlflowClient(sweep.uri)
    jobs = client.search_runs([sweep.experiment_id], jobs_filter(sweep.sweep_id))
    assert len(jobs) == len(TASKS) * len(STEPS)
    # the table, as make_tables prints it: a row per step limit, a column per task
    assert "| method | model |" in out
    assert "| giant (T=1) | random |" in out and "| giant (T=3) | random |" in out
    plot = Path(out.split("plot: ", 1)[1].split()[0])
    assert plot == sweep.sweep_dir / TABLES_DIR / PLOT and plot.read_bytes().startswith(b"\x89PNG")
    # one compare.py command per task: its two jobs differ in agent.max_steps only
    commands = [line.strip() for line in out.splitlines() if "scripts/compare.py" in line]
    assert len(commands) == len(TASKS)
    by_id = {job.info.run_id: job for job in jobs}
    for command in commands:
        a, b = command.split()[2:4]
        assert by_id[a].data.tags["dataset"] == by_id[b].data.tags["dataset"]
        steps = {by_id[run].data.params["agent.max_steps"] for run in (a, b)}
        assert steps == set(STEPS)
    assert f"viewStateShareKey={sweep.sweep_id}" in out
    # the parent run holds the table and the plot
    logged = {Path(a.path).name for a in client.list_artifacts(sweep.sweep_id, TABLES_DIR)}
    assert {PLOT, "table1.md", "table1.csv"} <= logged


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_reports_are_not_children_of_the_sweep(sweep: Sweep) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "make_tables.py"),
            *("--tracking-uri", sweep.uri, "--sweep-id", sweep.sweep_id),
            *("--out", str(sweep.sweep_dir / "report")),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = MlflowClient(sweep.uri).get_run(proc.stdout.split("logged as MLflow run ")[1].split()[0])
    assert run.data.tags[SWEEP_ID_TAG] == sweep.sweep_id and PARENT_TAG not in run.data.tags


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_make_ui_prints_its_addresses_once_the_ui_answers(ui: Ui, sweep: Sweep) -> None:
    text = "\n".join(ui.printed)
    assert ui.answered_when_printed, text
    assert "StarletteDeprecationWarning" not in text and "deprecated" not in text, text
    assert f"viewStateShareKey={sweep.sweep_id}" in _address(ui, "newest sweep")


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_the_sweep_view_opens_on_its_jobs(browser: Any, ui: Ui, sweep: Sweep, tmp_path: Path) -> None:
    with open_page(browser, _address(ui, "newest sweep"), **VIEWPORT) as opened:
        page = opened.page
        page.get_by_text(f"{len(TASKS) * len(STEPS)} matching runs").wait_for(timeout=120_000)
        _close_assistant(page)
        # the grid lays itself out again once the panel is gone: wait for its last view column
        page.locator("[role=columnheader]", has_text="steps_mean").first.wait_for(timeout=60_000)
        page.get_by_text(f"{TASKS[0]}-giant-T{STEPS[0]}-S1000").first.wait_for(timeout=60_000)
        headers = page.evaluate(HEADERS)
        body = page.inner_text("body")
        screenshot(page, shots(tmp_path) / "mlflow_sweep_table.png")
    # the swept setting, the task, the metric and its interval, dollars, calls and steps as columns
    for column in ("agent.max_steps", "dataset", "metric", "metric_ci_low", "metric_ci_high", "cost_usd"):
        assert column in headers, headers
    assert {"calls_paid", "steps_mean"} <= set(headers), headers
    # the jobs themselves, not the sweep's collapsed parent row
    for task in TASKS:
        for steps in STEPS:
            assert f"{task}-giant-T{steps}-S1000" in body
    assert f"sweep {sweep.sweep_dir.name}" not in body


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_the_sweep_view_charts_the_metric_against_the_step_limit(
    browser: Any, ui: Ui, sweep: Sweep, tmp_path: Path
) -> None:
    with open_page(browser, _address(ui, "the same sweep's charts"), **VIEWPORT) as opened:
        page = opened.page
        page.get_by_text(str(SECTION["name"])).first.wait_for(timeout=120_000)
        _close_assistant(page)
        card = page.locator(".js-plotly-plot").first
        card.wait_for(timeout=60_000)
        points = page.locator(".js-plotly-plot .scatterlayer .point").count()
        chart_text = page.inner_text("body")
        screenshot(page, shots(tmp_path) / "mlflow_sweep_chart.png")
    assert points == len(TASKS) * len(STEPS)  # one point per job
    assert "agent.max_steps" in chart_text and "metric" in chart_text


def _close_assistant(page: Any) -> None:
    """MLflow 3.17 opens its assistant panel beside the page; closed for the screenshots."""
    close = page.locator("button[aria-label='Close']")
    if close.count():
        close.first.click()
        page.wait_for_timeout(500)


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_the_metric_is_in_view_at_1366x768_in_a_fresh_profile(
    browser: Any, ui: Ui, sweep: Sweep, tmp_path: Path
) -> None:
    """Issue 42: MLflow 3.17's Assistant panel opens in a fresh profile and pushed the view's columns off
    screen; the metric's header and first value must be visible without closing it or scrolling."""
    with open_page(browser, _address(ui, "newest sweep"), **FRESH) as opened:
        page = opened.page
        page.get_by_text(f"{len(TASKS) * len(STEPS)} matching runs").wait_for(timeout=120_000)
        page.get_by_text(f"{TASKS[0]}-giant-T{STEPS[0]}-S1000").first.wait_for(timeout=60_000)
        page.wait_for_timeout(3000)  # the panels open and the grid lays itself out again
        place = page.evaluate(METRIC_PLACE)
        screenshot(page, shots(tmp_path) / "mlflow_sweep_table_1366.png")
    assert place is not None, "the metric column is not rendered: it lies off-screen"
    assert place["cell"] is not None and place["value"], place
    for left, top, right, bottom in (place["head"], place["cell"]):
        assert left >= 0 and top >= 0, place
        assert right <= place["width"] and bottom <= place["height"], place
    with open_page(browser, _address(ui, "the same sweep's charts"), **FRESH) as opened:
        page = opened.page
        card = page.locator(".js-plotly-plot").first
        card.wait_for(timeout=120_000)
        page.wait_for_timeout(3000)
        box = card.bounding_box()
        screenshot(page, shots(tmp_path) / "mlflow_sweep_chart_1366.png")
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] / 2 <= FRESH["width"], box
