"""What a new user meets in the first hour: a run that cannot measure the model stops with one line
and a non-zero exit, and the rerun after the fix completes.

Each test runs the job of `scripts/run_eval.py` in-process (giant.evaluate) on the demo slides (built
once per module) with a tmp MLflow store, and reads its end as the command line prints it: the
exception's exit code and one line (tests/helpers/cli.Ended), the job's own printed lines and warnings
(the process's line and code are tested by tests/cli/test_sweep_outcomes.py). The wrong key meets the
real openai SDK through a loopback server that answers 401 to every request and counts them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from giant.data.demo import build_demo
from giant.errors import EXIT_CONFIG, EXIT_INCOMPLETE, EXIT_SETUP
from giant.retry import BACKOFF_MIN_S
from tests.browser import loopback
from tests.helpers.cli import MAKE_TABLES, Ended, Env, clean_env, run_script

WRONG_KEY = "sk-wrong-0123456789abcdef"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    paths = build_demo(tmp_path_factory.mktemp("demo"))
    return paths.csv_path, paths.wsi_root


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    return clean_env(
        "OPENAI_", GIANT_CACHE_DIR=str(tmp / "cache"), GIANT_OUTPUT_DIR=str(tmp / "outputs"), **extra
    )


@dataclass
class Ran:
    """A job's end (its exit code and one line) and what it printed and logged on the way."""

    end: Ended
    out: str
    logged: str


def _job(tmp: Path, *args: str, env: dict[str, str] | None = None) -> Ran:
    """The job of `run_eval.py args`, in-process, into a new folder under tmp/outputs."""
    outputs = tmp / "outputs"
    folder = outputs / f"job{len(list(outputs.glob('job*'))) if outputs.is_dir() else 0}"
    with _capture() as seen:
        end = Env(tmp, env or _env(tmp)).ended(folder, *args)
    return Ran(end, *seen)


@contextmanager
def _capture() -> Iterator[list[str]]:
    """stdout and the log records' messages while the block runs (as [out, logged], filled at its end)."""
    import contextlib
    import io
    import logging

    out, records = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(records)
    root = logging.getLogger()
    root.addHandler(handler)
    seen: list[str] = []
    try:
        with contextlib.redirect_stdout(out):
            yield seen
    finally:
        root.removeHandler(handler)
        seen += [out.getvalue(), records.getvalue()]


def _tables(tmp: Path) -> subprocess.CompletedProcess[str]:
    env = _env(tmp, MLFLOW_TRACKING_URI=_store(tmp))
    return run_script(MAKE_TABLES, "--no-log", "--out", str(tmp / "tables"), cwd=tmp, env=env)


def _store(tmp: Path) -> str:
    return f"sqlite:///{tmp / 'store' / 'mlflow.db'}"


def _demo_args(tmp: Path, csv: Path, wsi_root: Path, *more: str) -> list[str]:
    return [
        "provider=random",
        f"dataset.csv_path={csv}",
        "dataset.benchmark=demo_shapes",
        f"dataset.wsi_root={wsi_root}",
        "agent.max_steps=2",
        f"tracking.uri={_store(tmp)}",
        *more,
    ]


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_a_folder_without_the_slides_stops_before_any_run(tmp_path: Path, demo: tuple[Path, Path]) -> None:
    csv, _ = demo
    empty = tmp_path / "empty"
    empty.mkdir()
    ran = _job(tmp_path, *_demo_args(tmp_path, csv, empty))
    assert ran.end.code == EXIT_CONFIG, ran.end
    errors = _lines(ran.end.line or "")
    assert len(errors) == 1
    assert f"dataset.wsi_root={empty}" in errors[0] and str(empty / "demo_01.svs") in errors[0]
    assert "accuracy" not in ran.out
    store = tmp_path / "store" / "mlflow.db"
    if store.exists():  # the store may be created, but no job run is
        assert not MlflowClient(_store(tmp_path)).search_runs(
            [e.experiment_id for e in MlflowClient(_store(tmp_path)).search_experiments()]
        )


def test_half_the_slides_is_marked_and_the_rerun_after_the_copy_completes(
    tmp_path: Path, demo: tuple[Path, Path]
) -> None:
    csv, full = demo
    root = tmp_path / "wsi"
    root.mkdir()
    names = sorted(path.name for path in full.glob("*.svs"))
    for name in names[:5]:
        shutil.copy(full / name, root / name)
    args = _demo_args(tmp_path, csv, root)

    first = _job(tmp_path, *args)
    assert first.end.code == EXIT_INCOMPLETE, first.end
    warnings = [line for line in _lines(first.out + first.logged) if "items have no slide under" in line]
    assert len(warnings) == 1 and "3 of 8 items" in warnings[0] and "skip_missing=true" in warnings[0]
    assert "3 slides missing" in first.out and "INCOMPLETE" in first.out
    assert (first.end.line or "").startswith("run_eval: incomplete: 3 of 8 item-runs have no slide")
    summary = json.loads(next((tmp_path / "outputs").rglob("summary.json")).read_text())
    assert summary["complete"] is False and summary["n_slides_missing"] == 3

    tables = _tables(tmp_path)
    assert tables.returncode == 0, tables.stderr
    left_out = [line for line in _lines(tables.stderr) if "is no cell" in line]  # never a cell
    assert len(left_out) == 1 and "3 of 8 item-runs unmeasured" in left_out[0], tables.stderr
    assert "| demo_shapes |" not in tables.stdout

    for name in names[5:]:
        shutil.copy(full / name, root / name)
    second = _job(tmp_path, *args)
    assert second.end.code == 0, second.end
    assert "resume: kept 5 item-runs, retrying 3 (3 slide_missing)" in second.out
    assert "INCOMPLETE" not in second.out and "slides missing" not in second.out


class _Refuser(BaseHTTPRequestHandler):
    """Answers every request as OpenAI answers a wrong key."""

    requests: list[str]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.requests.append(self.path)
        body = {
            "error": {
                "message": f"Incorrect API key provided: {WRONG_KEY[:6]}***{WRONG_KEY[-4:]}.",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
        }
        _reply_json(self, 401, body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@contextmanager
def refusing_server() -> Iterator[tuple[str, list[str]]]:
    with _serving(_Refuser) as (base_url, requests):
        yield base_url, requests


@contextmanager
def _serving(answer: type[BaseHTTPRequestHandler]) -> Iterator[tuple[str, list[Any]]]:
    """A loopback server on a free port whose handler `answer` appends what it saw to `requests`."""
    requests: list[Any] = []
    with loopback(type("Handler", (answer,), {"requests": requests})) as base:
        yield f"{base}/v1", requests


def _reply_json(handler: BaseHTTPRequestHandler, status: int, body: object) -> None:
    reply = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(reply)))
    handler.end_headers()
    handler.wfile.write(reply)


def test_a_wrong_key_costs_one_request_and_stops_the_run(tmp_path: Path, demo: tuple[Path, Path]) -> None:
    csv, wsi_root = demo
    with refusing_server() as (base_url, requests):
        args = _demo_args(tmp_path, csv, wsi_root, f"provider.base_url={base_url}", "concurrency=8")
        args[0] = "provider=openai"
        ran = _job(tmp_path, *args, env=_env(tmp_path, OPENAI_API_KEY=WRONG_KEY))
    assert ran.end.code == EXIT_SETUP, ran.end
    assert len(requests) <= 2  # 8 items, 8 workers: the first call goes alone and the 401 stops the run
    last = ran.end.line or ""
    assert last.startswith("run_eval: stopped at the first key error") and "$OPENAI_API_KEY" in last
    assert WRONG_KEY not in last + ran.out + ran.logged
    assert "STOPPED, no score" in ran.out and "accuracy" not in ran.out

    client = MlflowClient(_store(tmp_path))
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert len(runs) == 1 and runs[0].info.status == "FAILED"
    assert runs[0].data.tags["status"] == "stopped" and "metric_boot_mean" not in runs[0].data.metrics


class _Down(BaseHTTPRequestHandler):
    """Answers every request as a server that is down: a 500 with OpenAI's error body, no Retry-After.
    Each request is kept as (arrival time, digest of its body): an item's retries resend one body."""

    requests: list[tuple[float, str]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.requests.append((time.monotonic(), hashlib.sha256(body).hexdigest()))
        _reply_json(self, 500, {"error": {"message": "The server had an error", "type": "server_error"}})

    def log_message(self, format: str, *args: Any) -> None:
        return


def test_a_server_down_gets_three_requests_per_item_run_and_the_breaker_stops_the_run(
    tmp_path: Path, demo: tuple[Path, Path]
) -> None:
    """The default provider.max_retries=2 and backoff through the real CLI and the real openai SDK:
    every item-run sends at most 1 + 2 requests, each retry at least BACKOFF_MIN_S after the one
    before, and the circuit breaker (breaker_after=5) halts the run before the sixth item starts."""
    csv, wsi_root = demo
    with _serving(_Down) as (base_url, requests):
        args = _demo_args(
            tmp_path, csv, wsi_root, f"provider.base_url={base_url}", "limit=6", "concurrency=1"
        )
        args[0] = "provider=openai"
        ran = _job(tmp_path, *args, env=_env(tmp_path, OPENAI_API_KEY=WRONG_KEY))
    assert ran.end.code == EXIT_SETUP, ran.end
    last = ran.end.line or ""
    assert last.startswith("run_eval: circuit breaker: the last 5 item-runs failed") and "5 server" in last

    records = [json.loads(line) for line in next((tmp_path / "outputs").rglob("results.jsonl")).open()]
    started = len(records)  # item-runs that started before the breaker halted: each left a record
    assert started == 5 and {(r["status"], r["cause"]) for r in records} == {("retries_exhausted", "server")}
    assert len(requests) <= 3 * started, f"{len(requests)} requests for {started} item-runs"
    by_body: dict[str, list[float]] = {}
    for at, digest in requests:
        by_body.setdefault(digest, []).append(at)
    assert len(by_body) == started  # one first request per item-run, the rest are its retries
    assert max(len(times) for times in by_body.values()) <= 3
    gaps = [b - a for times in by_body.values() for a, b in itertools.pairwise(times)]
    assert gaps and min(gaps) >= BACKOFF_MIN_S, gaps


def test_a_patch_geometry_no_slide_can_serve_stops_before_any_run(
    tmp_path: Path, demo: tuple[Path, Path]
) -> None:
    """512 px at 2.0 µm/px is 4,096 level-0 px; the demo slides have 3,200 (issue 39)."""
    csv, wsi_root = demo
    args = _demo_args(tmp_path, csv, wsi_root, "agent=patch", "agent.patch_size=512", "agent.patch_mpp=2.0")
    ran = _job(tmp_path, *args)
    assert ran.end.code == EXIT_CONFIG, ran.end
    errors = _lines(ran.end.line or "")
    assert len(errors) == 1
    assert errors[0].startswith("run_eval: agent.patch_size=512 agent.patch_mpp=2: no slide of the run")
    assert "patches of 4096 level-0 px, the slide is 3200x2400" in errors[0]
    assert not list((tmp_path / "outputs").rglob("results.jsonl"))


def test_a_server_failing_under_the_breaker_ends_incomplete_with_no_cell(
    tmp_path: Path, demo: tuple[Path, Path]
) -> None:
    """Fewer failures in a row than breaker_after: the run goes to the end, and before issue 39 it said
    "accuracy 0.000", exit 0, MLflow status complete and a table cell "0.0 ± 0.0"."""
    csv, wsi_root = demo
    with _serving(_Down) as (base_url, _):
        args = _demo_args(
            tmp_path, csv, wsi_root, f"provider.base_url={base_url}", "limit=2", "provider.max_retries=0"
        )
        args[0] = "provider=openai"
        ran = _job(tmp_path, *args, env=_env(tmp_path, OPENAI_API_KEY=WRONG_KEY))
    assert ran.end.code == EXIT_INCOMPLETE, ran.end
    assert "accuracy" not in ran.out
    assert "INCOMPLETE, no score: 2 item-runs unmeasured" in ran.out
    last = ran.end.line or ""
    assert last.startswith("run_eval: incomplete: 2 of 2 item-runs unmeasured (2 server); "), last
    summary = json.loads(next((tmp_path / "outputs").rglob("summary.json")).read_text())
    assert (summary["complete"], summary["n_unmeasured"]) == (False, 2)
    client = MlflowClient(_store(tmp_path))
    [run] = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert run.data.tags["status"] == "incomplete"
    tables = _tables(tmp_path)
    assert "0.0 ± 0.0" not in tables.stdout and f"run {run.info.run_id}" in tables.stderr
