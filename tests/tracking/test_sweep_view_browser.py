"""From sweep to comparison, as a researcher meets it: a real `-m` sweep through the CLI (the session's
demo store, tests/helpers/store.py: two tasks x two step limits, the offline random provider) ends with
its table, plot, MLflow address and compare.py commands, and logs table and plot on its parent run;
`make ui`'s command (giant.tracking.ui, the session's UI: tests/helpers/ui.py) prints its addresses
only once the UI answers, without Starlette's warning; the sweep's address opens, in
headless Chromium, on the sweep's job runs with the swept setting, the task, the metric, its interval
and dollars as columns, and on a chart of the metric against the step limit.

The screenshots go to $GIANT_PICTURES when set (`make pictures`: docs/images/, shown by the guide
docs/mlflow_sweeps.md), else into the test's tmp folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from giant.tracking.names import PARENT_TAG, SWEEP_ID_TAG
from giant.tracking.sweep_result import PLOT, TABLES_DIR
from giant.tracking.view import SECTION, jobs_filter
from tests.browser import open_page, screenshot, shots
from tests.helpers.store import ROOT, STEPS, TASKS, DemoStore
from tests.helpers.ui import Ui

VIEWPORT = {"width": 1920, "height": 900}  # wide enough that the grid renders every view column
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


@pytest.mark.subprocess_job  # what the demo store's sweep printed (its one job subprocess)
@pytest.mark.slow
def test_the_sweep_ends_with_its_result(demo_store: DemoStore) -> None:
    out = demo_store.stdout
    client = demo_store.client()
    jobs = client.search_runs([demo_store.experiment_id], jobs_filter(demo_store.sweep_id))
    assert len(jobs) == len(TASKS) * len(STEPS)
    # the table, as make_tables prints it: a row per step limit, a column per task
    assert "| method | model |" in out
    assert "| giant (T=1) | random |" in out and "| giant (T=3) | random |" in out
    plot = Path(out.split("plot: ", 1)[1].split()[0])
    assert plot == demo_store.sweep_dir / TABLES_DIR / PLOT and plot.read_bytes().startswith(b"\x89PNG")
    # one compare.py command per task: its two jobs differ in agent.max_steps only
    commands = [line.strip() for line in out.splitlines() if "scripts/compare.py" in line]
    assert len(commands) == len(TASKS)
    by_id = {job.info.run_id: job for job in jobs}
    for command in commands:
        a, b = command.split()[2:4]
        assert by_id[a].data.tags["dataset"] == by_id[b].data.tags["dataset"]
        steps = {by_id[run].data.params["agent.max_steps"] for run in (a, b)}
        assert steps == set(STEPS)
    assert f"viewStateShareKey={demo_store.sweep_id}" in out
    # the parent run holds the table and the plot
    logged = {Path(a.path).name for a in client.list_artifacts(demo_store.sweep_id, TABLES_DIR)}
    assert {PLOT, "table1.md", "table1.csv"} <= logged


@pytest.mark.slow
def test_reports_are_not_children_of_the_sweep(demo_store: DemoStore, tmp_path: Path) -> None:
    store = demo_store.copy(tmp_path / "store")  # make_tables logs a report run
    proc = store.run(
        ROOT / "scripts" / "make_tables.py",
        *("--tracking-uri", store.uri, "--sweep-id", store.sweep_id),
        *("--out", str(tmp_path / "report")),
    )
    run = store.client().get_run(proc.stdout.split("logged as MLflow run ")[1].split()[0])
    assert run.data.tags[SWEEP_ID_TAG] == store.sweep_id and PARENT_TAG not in run.data.tags


@pytest.mark.slow
def test_make_ui_prints_its_addresses_once_the_ui_answers(demo_ui: Ui, demo_store: DemoStore) -> None:
    text = "\n".join(demo_ui.printed)
    assert demo_ui.answered_when_printed, text
    assert "StarletteDeprecationWarning" not in text and "deprecated" not in text, text
    assert f"viewStateShareKey={demo_store.sweep_id}" in demo_ui.address("newest sweep")


@pytest.mark.slow
def test_the_sweep_view_opens_on_its_jobs(
    browser: Any, demo_ui: Ui, demo_store: DemoStore, tmp_path: Path
) -> None:
    with open_page(browser, demo_ui.address("newest sweep"), **VIEWPORT) as opened:
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
    assert f"sweep {demo_store.sweep_dir.name}" not in body


@pytest.mark.slow
def test_the_sweep_view_charts_the_metric_against_the_step_limit(
    browser: Any, demo_ui: Ui, demo_store: DemoStore, tmp_path: Path
) -> None:
    with open_page(browser, demo_ui.address("the same sweep's charts"), **VIEWPORT) as opened:
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


@pytest.mark.slow
def test_the_metric_is_in_view_at_1366x768_in_a_fresh_profile(
    browser: Any, demo_ui: Ui, demo_store: DemoStore, tmp_path: Path
) -> None:
    """Issue 42: MLflow 3.17's Assistant panel opens in a fresh profile and pushed the view's columns off
    screen; the metric's header and first value must be visible without closing it or scrolling."""
    with open_page(browser, demo_ui.address("newest sweep"), **FRESH) as opened:
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
    with open_page(browser, demo_ui.address("the same sweep's charts"), **FRESH) as opened:
        page = opened.page
        card = page.locator(".js-plotly-plot").first
        card.wait_for(timeout=120_000)
        page.wait_for_timeout(3000)
        box = card.bounding_box()
        screenshot(page, shots(tmp_path) / "mlflow_sweep_chart_1366.png")
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] / 2 <= FRESH["width"], box
