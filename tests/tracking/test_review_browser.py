"""What a pathologist sees, checked in headless Chromium against a real `mlflow ui` on 127.0.0.1 (the
session's, over its demo store: tests/helpers/store.py): a traced job's trace shows the crop the model
was sent inline in its call's span, and the review queue scripts/review.py made (giant.tracking.review,
when the store was built) is listed with its traces to do. The screenshots go to $GIANT_PICTURES when set
(`make pictures`: docs/images/, which docs/review.md shows), else into the test's tmp folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser import screenshot, shots
from tests.helpers.store import DemoStore
from tests.helpers.ui import RENDER_MS, Ui


@pytest.mark.slow
def test_the_trace_shows_the_crop_and_the_queue_its_traces(
    demo_ui: Ui, demo_store: DemoStore, browser: Any, tmp_path: Path
) -> None:
    base, review = demo_ui.base, demo_store.review
    experiment_id = review.experiment_id
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
        screenshot(page, shots(tmp_path) / "review_trace.png")

        page.goto(f"{base}/#/experiments/{experiment_id}/review-queue")
        queue = page.get_by_text(review.queue_name, exact=True).first
        queue.wait_for(timeout=RENDER_MS)
        queue.click()
        page.get_by_text("Needs review").first.wait_for(timeout=RENDER_MS)  # its traces, listed
        screenshot(page, shots(tmp_path) / "review_queue.png")
    finally:
        page.close()
