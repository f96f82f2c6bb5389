"""A remote MLflow server that goes away as a job ends (issue 39): the real CLI in a subprocess, a real
`mlflow server` on 127.0.0.1 that the job kills (SIGKILL) right after writing its job folder, before
its last MLflow calls. The job waits at most tracking.finish_timeout_s, then ends with one line and
exit 6, no traceback; its records are on disk. Once the server is back on the same port and store,
the same command logs them: the MLflow run is reattached and FINISHED, none is left RUNNING. Ctrl-C
and SIGTERM during the wait end the job at once (130 and 143), not after MLflow's minutes of retries:
Ctrl-C is tested in-process against a closed port (no server to start)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

import giant
from giant.errors import EXIT_UNTRACKED
from tests.helpers.cli import ROOT, SCRIPT, TIMEOUT
from tests.slurm.mlflow_server import MlflowServer

# The real CLI, whose job kills the tracking server once its job folder is written (giant.job's
# write_outputs), so that only the job's last MLflow calls meet the outage.
OUTAGE_CLI = textwrap.dedent(
    """
    import os, pathlib, runpy, signal, sys

    import giant.job

    real_write_outputs = giant.job.write_outputs

    def write_outputs(*args, **kwargs):
        files = real_write_outputs(*args, **kwargs)
        os.killpg(int(os.environ["OUTAGE_SERVER_PGID"]), signal.SIGKILL)
        pathlib.Path(os.environ["OUTAGE_FLAG"]).touch()
        return files

    giant.job.write_outputs = write_outputs
    sys.argv[0] = sys.argv.pop(1)
    runpy.run_path(sys.argv[0], run_name="__main__")
    """
)
FLAG_WAIT_S = 240  # the job reaching its end on a busy 2-core machine


def _env(tmp: Path, server: MlflowServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "GIANT_", "HYDRA_"))}
    env.update(
        PYTHONPATH=str(ROOT),
        GIANT_CACHE_DIR=str(tmp / "cache"),
        GIANT_OUTPUT_DIR=str(tmp / "outputs"),
        OUTAGE_SERVER_PGID=str(server.proc.pid),  # start_new_session: its pid is its group
        OUTAGE_FLAG=str(tmp / "server_killed"),
    )
    return env


def _args(server: MlflowServer, timeout_s: float) -> list[str]:
    return [
        "provider=random",
        "agent.max_steps=2",
        "limit=2",
        f"tracking.uri={server.uri}",
        f"tracking.finish_timeout_s={timeout_s}",
    ]


def _started(root: Path, port: int | None = None) -> MlflowServer:
    root.mkdir(exist_ok=True)
    server = MlflowServer(root, port)
    try:
        server.wait_ready()
    except BaseException:
        server.stop()
        raise
    return server


def _job_runs(uri: str) -> list:
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("giant")
    return client.search_runs([experiment.experiment_id]) if experiment else []


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_a_server_gone_at_the_jobs_end_is_one_line_exit_6_and_the_rerun_logs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = _started(tmp_path / "server")
    env = _env(tmp_path, server)
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                OUTAGE_CLI,
                str(SCRIPT),
                *_args(server, 3),
                f"hydra.run.dir={tmp_path / 'job1'}",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    finally:
        server.stop()
    assert (tmp_path / "server_killed").is_file(), proc.stderr[-3000:]
    assert proc.returncode == EXIT_UNTRACKED, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    # MLflow's own retries, bounded from the same 3 s, may give up before the probe's 3 s of silence
    assert last.startswith(f"run_eval: MLflow at {server.uri} "), last
    assert "did not answer for 3 s" in last or "failed (API request to" in last, last
    assert "tracking.finish_timeout_s=3" in last and "rerun the same command" in last
    assert str(tmp_path / "job1") in last
    assert json.loads((tmp_path / "job1" / "summary.json").read_text())["complete"] is True
    assert f"-> {tmp_path / 'job1'}" in proc.stdout  # the summary line, as ever

    # The rerun is the same job in this process (giant.evaluate): the exit code was the first run's
    # subject; here it is what reaches the server.
    for name in [name for name in os.environ if name.startswith(("MLFLOW_", "GIANT_", "HYDRA_"))]:
        monkeypatch.delenv(name)  # the job's environment as the subprocess had it, restored afterwards
    monkeypatch.setenv("GIANT_CACHE_DIR", env["GIANT_CACHE_DIR"])
    monkeypatch.setenv("GIANT_OUTPUT_DIR", env["GIANT_OUTPUT_DIR"])
    monkeypatch.chdir(tmp_path)
    back = _started(tmp_path / "server", server.port)  # the same store, the same address
    try:
        capsys.readouterr()
        rerun = giant.evaluate(_args(back, 3), output_dir=tmp_path / "job2")
        assert rerun is not None and rerun.complete
        assert "resuming run key" in capsys.readouterr().out
        runs = _job_runs(back.uri)
    finally:
        back.stop()
    assert [run.info.status for run in runs] == ["FINISHED"]  # reattached, not a second run
    assert runs[0].data.tags["status"] == "complete" and "metric_boot_mean" in runs[0].data.metrics


@pytest.mark.subprocess_job
def test_ctrl_c_while_waiting_for_the_server_ends_the_job_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In-process, against a closed port: the job's last MLflow calls (giant.job's finish phase, a
    real JobRun and MlflowClient) meet a server that is gone, under a 60 s bound; a SIGINT, as a
    terminal's Ctrl-C sends it, ends the wait within a poll, and the run is marked abandoned so that
    closing it does not wait on the server again. Meanwhile MLflow's own retries are bounded from the
    same setting, so the abandoned worker stops soon after (SIGTERM takes the same path:
    test_deadline.py)."""
    from hydra import compose, initialize_config_dir
    from mlflow.tracking import MlflowClient

    from giant.config import RunSettings
    from giant.eval.summarize import summarize
    from giant.interrupt import StopRequest
    from giant.job import _finish_tracking_within
    from giant.record.read import JobRecord
    from giant.record.summary import Provenance
    from giant.tracking.mlflow_logger import JobRun

    for name in ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)  # restored after the test: the worker may outlive it
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        uri = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with initialize_config_dir(str(ROOT / "conf"), version_base=None):
        cfg = compose(
            "config", overrides=["provider=random", f"tracking.uri={uri}", "tracking.finish_timeout_s=60"]
        )
    settings = RunSettings.from_config(cfg)
    summary = summarize(
        [],
        [],
        dataset="demo",
        metric_name="accuracy",
        runs_per_item=1,
        seed=0,
        scoring=settings.run.scoring,
        provenance=Provenance(run_key="k", config_hash="c", dataset_hash="d"),
    )
    job = JobRun(MlflowClient(uri), "0" * 32, settings)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Timer(1.0, os.kill, args=(os.getpid(), signal.SIGINT)).start()
    with pytest.raises(KeyboardInterrupt):  # MLflow's retries alone would hold it for minutes
        record = JobRecord(str(tmp_path), [], summary, folder=tmp_path)
        _finish_tracking_within(job, settings, record, {}, StopRequest())
    assert job.abandoned
    assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "4"  # the worker gives up within ~1 min
