"""The guide's own scorer example (docs/review.md), run as written over a traced job: it re-scores
every trace with `mlflow.genai.evaluate` and no model call (no connection leaves the process), and
its metric is the rule it states, counted from the job's own record."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from giant.record import JobLayout, read_results
from giant.tracking.traces import log_traces
from tests.tracking.traced import N_ITEMS, new_job

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "review.md"


def _example() -> str:
    section = GUIDE.read_text(encoding="utf-8").split("## Re-score the traces with your own scorer", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None, "the guide's scorer example is missing"
    return found.group(1)


@pytest.mark.slow
def test_the_guides_scorer_rescores_the_traces_without_a_model_call(
    job_dir: Path, mlflow_store: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    uri, experiment_id = mlflow_store
    job = new_job(uri, experiment_id)
    assert log_traces(job, job_dir) == N_ITEMS
    monkeypatch.setenv("RUN_ID", job.run_id)
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    connections: list[object] = []

    def refuse(self: socket.socket, address: object) -> None:
        connections.append(address)
        raise OSError(f"a connection to {address} from a scorer that needs none")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    scope: dict[str, object] = {"__name__": "guide_example"}
    exec(compile(_example(), str(GUIDE), "exec"), scope)

    assert connections == []
    expected = []
    for record in read_results(JobLayout(job_dir).results):  # the example's rule, from the job's record
        mpps = [mpp for mpp in record.mpps or [] if mpp is not None]
        expected.append(record.correct and bool(mpps) and min(mpps) <= 0.5)
    assert 0 < sum(expected) < len(expected)  # the rule tells these item-runs apart
    metrics = scope["result"].metrics  # type: ignore[attr-defined]
    assert metrics["right_at_high_power/mean"] == pytest.approx(sum(expected) / len(expected))
