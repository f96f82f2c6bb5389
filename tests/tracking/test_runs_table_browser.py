"""The address `make ui` prints for an experiment opens its runs table, in the UI's model-training view,
in a real `mlflow ui` (headless Chromium over a sqlite store): MLflow 3.17's UI opens an experiment on
its GenAI overview, as its "GenAI | Model training" switch stands, whatever the experiment's kind tag."""

from __future__ import annotations

from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from giant.config import TrackingSettings, shipped
from giant.tracking.mlflow_logger import open_experiment
from giant.tracking.store import runs_table_links
from tests.browser import open_page
from tests.helpers.store import DemoStore
from tests.helpers.ui import Ui


@pytest.mark.slow
def test_the_printed_address_opens_the_runs_table(browser: Any, demo_ui: Ui, demo_store: DemoStore) -> None:
    """In an experiment of its own beside the demo's, in the session's UI (tests/helpers/ui.py)."""
    base, uri = demo_ui.base, demo_store.uri
    client, experiment_id = open_experiment(shipped(TrackingSettings, uri=uri, experiment="runs_table"))
    client.create_run(experiment_id, run_name="the-job-run")
    (line,) = [line for line in runs_table_links(MlflowClient(uri), base) if "runs_table" in line]
    address = line.rsplit(": ", 1)[1]
    with open_page(browser, address) as opened:
        opened.page.get_by_text("the-job-run").first.wait_for(timeout=60_000)
        body = opened.page.inner_text("body")
        assert f"/#/experiments/{experiment_id}/runs" in opened.page.url
    assert "Run Name" in body  # the runs table's header
    # The model-training view (sidebar: Runs, Models, Traces), not GenAI's, which shows the same
    # table as "Training runs" beside its Overview, Evaluation, Judges, ... pages.
    assert "Training runs" not in body and "Judges" not in body, body[:600]
