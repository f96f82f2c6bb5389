"""JobRun and the sweep callback against a real MLflow sqlite store (no runner: a hand-made summary)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from mlflow.tracking import MlflowClient

from giant.cli.callbacks import SWEEP_TABLE, MlflowSweepCallback
from giant.config import CONF_DIR, RunSettings
from giant.core import Item
from giant.record.summary import Bootstrap, Provenance, Summary, Totals
from giant.secrets import REDACTED, is_secret_key, secret_values
from giant.tracking.mlflow_logger import PARENT_TAG, JobRun, SweepInfo, job_tags, summary_metrics
from giant.tracking.params import to_params

SECRET = "sk-test-SECRET-0123456789abcdef"


def _settings(overrides: list[str]) -> RunSettings:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    return RunSettings.from_config(cfg)


def _summary(complete: bool = True) -> Summary:
    return Summary(
        benchmark="demo_shapes",
        metric_name="accuracy",
        complete=complete,
        n_items=4,
        n_scored=3,
        runs_per_item=2,
        metric=Bootstrap(point=0.5, mean=0.49, std=0.2, ci_low=0.1, ci_high=0.9, replicates=100, seed=0),
        metric_scored_only=2 / 3,
        accuracy=0.5,
        balanced_accuracy=0.375,
        per_run=[0.25, 0.75],
        per_run_mean=0.5,
        per_run_std=0.25,
        counts_by_status={"answered": 3, "timeout": 1},
        totals=Totals(
            input_tokens=1000, cached_input_tokens=250, output_tokens=50, cost_usd=0.2, steps_max=5
        ),
        provenance=Provenance(run_key="k", config_hash="c", dataset_hash="d"),
    )


def _item() -> Item:
    return Item(
        benchmark="demo_shapes",
        benchmark_id="1",
        image_path="a.svs",
        prompt="q",
        options=("a", "b"),
        truth=1,
        metric="accuracy",
    )


def test_secret_detection(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {
        "OPENAI_API_KEY": SECRET,
        "HOME": "/root/somewhere",
        "GH_TOKEN": "short",
        "DB_PASSWORD": "hunter2hunter2",
    }
    assert secret_values(env) == [SECRET, "hunter2hunter2"]
    assert is_secret_key("provider.api_key") and is_secret_key("x.token") and is_secret_key("db.password")
    assert not is_secret_key("provider.api_key_env") and not is_secret_key("provider.max_tokens")


def test_params_are_flat_short_and_scrubbed() -> None:
    params = to_params(
        {"a": {"b": 1, "api_key": "plain", "note": f"use {SECRET}"}, "long": "x" * 400, "empty": {}},
        secrets=[SECRET],
        max_length=50,
    )
    assert params["a.b"] == "1"
    assert params["a.api_key"] == REDACTED
    assert params["a.note"] == f"use {REDACTED}"
    assert len(params["long"]) == 50 and params["long"].endswith("...")
    assert params["empty"] == "{}"


def test_summary_metrics_copy_summary_values() -> None:
    metrics = summary_metrics(_summary())
    assert metrics["metric"] == 0.5 and metrics["metric_boot_std"] == 0.2
    assert metrics["status_timeout"] == 1 and metrics["tokens_cached"] == 250
    assert metrics["cache_hit_ratio"] == 0.25
    assert metrics["cost_per_item_usd"] == pytest.approx(0.05)


def _store(tmp_path: Path, template: Path) -> str:
    """A copy of the migrated empty store (conftest): MLflow's schema setup costs seconds."""
    db = tmp_path / "store" / "mlflow.db"
    db.parent.mkdir(parents=True)
    shutil.copyfile(template, db)
    return f"sqlite:///{db}"


def test_job_and_sweep_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, empty_store_db: Path) -> None:
    """A sweep parent from the callback, one child job with params, metrics, tags and redacted artifacts."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    uri = _store(tmp_path, empty_store_db)
    sweep_dir = tmp_path / "sweep"
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        hydra_cfg = compose(
            "config",
            overrides=[f"tracking.uri={uri}", f"hydra.sweep.dir={sweep_dir}"],
            return_hydra_config=True,
        )
        callback = MlflowSweepCallback()
        callback.on_multirun_start(hydra_cfg)  # validates the sweep's jobs with Hydra's compose API
    sweep = SweepInfo.read(sweep_dir)
    assert sweep is not None and sweep.tracking_uri == uri

    settings = _settings([f"tracking.uri={uri}", "agent.max_steps=5", f"paths.data_dir=/data/key-{SECRET}"])
    tags = job_tags(settings, [_item()], dataset_hash="dh", git_commit="abc", sweep_id=sweep.parent_run_id)
    job = JobRun.start(settings, tags=tags, sweep=sweep)
    leaky = tmp_path / "leaky.json"
    leaky.write_text(json.dumps({"header": f"Bearer {SECRET}"}))
    folder = tmp_path / "trajectories" / "item1"
    folder.mkdir(parents=True)
    (folder / "trajectory.json").write_text("{}")
    job.log_summary(_summary())
    job.log_artifacts(
        {"summary.json": leaky, "missing.json": tmp_path / "nope"}, {"trajectories": folder.parent}
    )
    job.finish()
    callback.on_multirun_end(hydra_cfg)

    client = MlflowClient(uri)
    run = client.get_run(job.run_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags[PARENT_TAG] == sweep.parent_run_id
    assert run.data.tags["sweep_id"] == sweep.parent_run_id
    assert (run.data.tags["T"], run.data.tags["agent_mode"], run.data.tags["status"]) == (
        "5",
        "giant",
        "complete",
    )
    assert run.data.params["agent.max_steps"] == "5"
    assert run.data.params["paths.data_dir"] == f"/data/key-{REDACTED}"
    assert run.data.metrics["metric"] == 0.5
    assert [m.value for m in client.get_metric_history(job.run_id, "run_metric")] == [0.25, 0.75]
    names = {a.path for a in client.list_artifacts(job.run_id)}
    assert names == {"summary.json", "trajectories"}
    local = Path(client.download_artifacts(job.run_id, "summary.json", str(tmp_path / "dl")))
    assert SECRET not in local.read_text() and REDACTED in local.read_text()

    parent = client.get_run(sweep.parent_run_id)
    assert parent.info.status == "FINISHED" and parent.data.tags["status"] == "complete"
    assert parent.data.metrics["n_jobs"] == 1
    assert SWEEP_TABLE in {a.path for a in client.list_artifacts(sweep.parent_run_id)}
    store_bytes = b"".join(p.read_bytes() for p in (tmp_path / "store").rglob("*") if p.is_file())
    assert SECRET.encode() not in store_bytes


def test_resume_reattaches_an_unfinished_run(tmp_path: Path, empty_store_db: Path) -> None:
    uri = _store(tmp_path, empty_store_db)
    settings = _settings([f"tracking.uri={uri}"])
    tags = job_tags(settings, [_item()], dataset_hash="dh", git_commit=None, sweep_id="")
    first = JobRun.start(settings, tags=tags, sweep=None)
    first.client.set_terminated(first.run_id, status="KILLED")
    again = JobRun.start(settings, tags=tags, sweep=None, resume_run_id=first.run_id)
    assert again.run_id == first.run_id
    assert again.client.get_run(again.run_id).info.status == "RUNNING"
    again.log_summary(_summary(complete=False))
    again.finish()
    assert again.client.get_run(again.run_id).data.tags["status"] == "incomplete"
    fresh = JobRun.start(settings, tags=tags, sweep=None, resume_run_id=first.run_id)
    assert fresh.run_id != first.run_id  # a finished run is never reopened


def test_unreachable_server_is_one_line_in_seconds() -> None:
    import socket
    import time

    from giant.errors import ConfigError
    from giant.tracking.mlflow_logger import check_server

    with socket.socket() as probe:  # a port nobody listens on once the probe closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(ConfigError, match=r"no MLflow server answers at http://127\.0\.0\.1:\d+") as info:
        check_server(f"http://user:s3cret@127.0.0.1:{port}/prefix", timeout_s=2.0)
    assert "\n" not in str(info.value) and "s3cret" not in str(info.value)
    # Generous for a loaded CI machine: what matters is one refused try, not a wait through retries.
    assert time.monotonic() - started < 60


def test_a_server_that_answers_passes_the_check() -> None:
    import http.server
    import threading

    from giant.tracking.mlflow_logger import check_server

    paths: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            paths.append(self.path)
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        check_server(f"http://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
    assert paths == ["/health"]


def test_params_and_metrics_past_one_request_all_land(tmp_path: Path, empty_store_db: Path) -> None:
    """MLflow's store takes at most 100 params and 1000 metrics per request; the client splits."""
    uri = _store(tmp_path, empty_store_db)
    settings = _settings([f"tracking.uri={uri}"])
    job = JobRun.start(settings, tags={}, sweep=None)
    params = {f"extra.p{i}": str(i) for i in range(250)}
    job.log_params(params)
    summary = _summary().model_copy(update={"per_run": [i / 1500 for i in range(1500)]})
    job.log_summary(summary)
    client = MlflowClient(uri)
    assert params.items() <= client.get_run(job.run_id).data.params.items()
    history = client.get_metric_history(job.run_id, "run_metric")
    assert sorted(m.step for m in history) == list(range(1500))
