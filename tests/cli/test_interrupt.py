"""SIGTERM and submitit's requeue on the real CLI (subprocesses), with a real sqlite MLflow store.

The scripted provider sleeps in every call, so a signal always finds the run mid-item. A rerun must
reattach the same MLflow run and call no finished item again: a finished item's result line is
carried over byte for byte (a second call would write a new line with a new duration).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow.entities import Run
from mlflow.tracking import MlflowClient

from tests.helpers.cli import SCRIPT, Env

ANSWER = {"reasoning": "done", "action": {"type": "answer", "text": '<response>{"answer": 1}</response>'}}
N_ITEMS = 8  # the demo set's accuracy task


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Env:
    return Env.make(tmp_path_factory.mktemp("interrupt"))


def _script(cli: Env, sleep: float) -> Path:
    path = cli.tmp / f"answer_after_{sleep}s.jsonl"
    path.write_text(json.dumps({**ANSWER, "sleep": sleep}) + "\n")
    return path


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.is_file() else []


def _start(cli: Env, args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), *args], cwd=cli.tmp, env=cli.env, stderr=subprocess.PIPE, text=True
    )


def _wait_for_lines(results: Path, n: int, proc: subprocess.Popen[str], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while len(_lines(results)) < n:
        assert proc.poll() is None, f"exited {proc.returncode} before {n} results"
        assert time.monotonic() < deadline, f"no {n} results in {timeout_s} s"
        time.sleep(0.05)


def _sweep_runs(cli: Env, sweep_dir: Path) -> tuple[Run, list[Run]]:
    """The sweep's parent run and its child runs."""
    client = MlflowClient(cli.uri)
    info = json.loads((sweep_dir / "mlflow_sweep.json").read_text())
    parent_id = info["parent_run_id"]
    children = client.search_runs([info["experiment_id"]], f"tags.`mlflow.parentRunId` = '{parent_id}'")
    return client.get_run(parent_id), children


def _assert_one_line_stop(proc: subprocess.Popen[str], stderr: str) -> None:
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr, stderr
    stops = [line for line in stderr.splitlines() if line.startswith("run_eval:")]
    assert stops == [stderr.strip().splitlines()[-1]], stderr
    assert stops[0].startswith("run_eval: stopped by SIGTERM; rerun the same command to resume"), stderr


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_sigterm_stops_cleanly_and_the_rerun_resumes_the_same_mlflow_run(cli: Env) -> None:
    run_dir = cli.tmp / "single"
    args = ["provider=scripted", f"provider.script={_script(cli, 0.6)}", "concurrency=2", "seed=7"]
    args += [f"tracking.uri={cli.uri}", f"hydra.run.dir={run_dir}"]
    results = run_dir / "results.jsonl"
    proc = _start(cli, args)
    _wait_for_lines(results, 2, proc)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    _assert_one_line_stop(proc, stderr)

    first = _lines(results)
    records = [json.loads(line) for line in first]  # every line whole: never cut mid-write
    assert 2 <= len(records) < N_ITEMS
    for record in records:
        assert json.loads((run_dir / record["trajectory"] / "trajectory.json").read_text())["status"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert not summary["complete"] and "SIGTERM" in summary["incomplete_reason"]
    client = MlflowClient(cli.uri)
    experiment = client.get_experiment_by_name("giant")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1
    killed = runs[0]
    assert killed.info.status == "KILLED"
    assert killed.data.tags["status"] == "interrupted" and killed.data.tags["interruption"] == "SIGTERM"

    again = cli.run(*args)
    assert "resuming run key" in again.stdout
    final = _lines(results)
    assert len(final) == N_ITEMS and len({json.loads(line)["key"] for line in final}) == N_ITEMS
    assert set(first) <= set(final)  # finished items carried over untouched, not called again
    resumed = client.get_run(killed.info.run_id)
    assert resumed.info.status == "FINISHED" and resumed.data.tags["status"] == "complete"
    assert resumed.data.metrics["n_items"] == N_ITEMS
    assert len(client.search_runs([killed.info.experiment_id])) == 1  # reattached, no second run


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_sigterm_while_the_job_sets_up_is_one_line_and_no_item_starts(cli: Env) -> None:
    """Hydra has made the job's folder, the job is loading its data and opening MLflow: the items'
    handler does not listen yet. Python's default would end the process at once, silently (-15)."""
    run_dir = cli.tmp / "setup"
    args = ["provider=scripted", f"provider.script={_script(cli, 0.6)}", "seed=7"]
    args += [f"tracking.uri={cli.uri}", f"hydra.run.dir={run_dir}"]
    proc = _start(cli, args)
    deadline = time.monotonic() + 120
    while not (run_dir / ".hydra" / "config.yaml").is_file():
        assert proc.poll() is None and time.monotonic() < deadline, "the job never started"
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    _assert_one_line_stop(proc, stderr)
    assert _lines(run_dir / "results.jsonl") == []  # stopped at its first check: no item ran


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_sigterm_during_a_sweep_closes_its_parent_as_interrupted_not_failed(cli: Env) -> None:
    sweep_dir = cli.tmp / "sweep"
    args = ["-m", "provider=scripted", f"provider.script={_script(cli, 0.6)}", "agent.max_steps=19,20"]
    args += ["concurrency=1", f"tracking.uri={cli.uri}", f"hydra.sweep.dir={sweep_dir}"]
    proc = _start(cli, args)
    _wait_for_lines(sweep_dir / "0" / "results.jsonl", 1, proc)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    _assert_one_line_stop(proc, stderr)

    parent, children = _sweep_runs(cli, sweep_dir)
    assert parent.info.status == "KILLED", parent.data.tags
    assert parent.data.tags["status"] == "interrupted" and parent.data.tags["interruption"] == "SIGTERM"
    assert [(c.info.status, c.data.tags["status"]) for c in children] == [("KILLED", "interrupted")]
    assert not (sweep_dir / "1").exists()  # the sweep stopped: the second job never started


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_sigterm_to_a_joblib_sweep_stops_every_running_job_cleanly(cli: Env) -> None:
    """Only the sweep process gets the signal (`kill PID`): it passes it on to the workers, and no job
    is killed by joblib before it has closed its run."""
    sweep_dir = cli.tmp / "joblib"
    # 2 s per item: a job lasts 16 s, so the first job is still running when the second, whose worker
    # starts later (seconds later on a loaded machine), writes its first result
    args = ["-m", "launcher=joblib", "provider=scripted", f"provider.script={_script(cli, 2.0)}"]
    args += [
        "agent.max_steps=17,18",
        "concurrency=1",
        f"tracking.uri={cli.uri}",
        f"hydra.sweep.dir={sweep_dir}",
    ]
    proc = _start(cli, args)
    for job in ("0", "1"):
        _wait_for_lines(sweep_dir / job / "results.jsonl", 1, proc)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143 and "Traceback" not in stderr, stderr
    # both workers write to one stderr: a stop line can land after the other job's progress bar on the
    # same line, so the messages are found anywhere, not only at the start of a line
    stops = re.findall(r"run_eval: [^\r\n]*", stderr)
    assert len(stops) == 2 and all(line.startswith("run_eval: stopped by SIGTERM") for line in stops), stderr

    parent, children = _sweep_runs(cli, sweep_dir)
    assert parent.info.status == "KILLED" and parent.data.tags["status"] == "interrupted"
    assert sorted((c.info.status, c.data.tags["status"]) for c in children) == [("KILLED", "interrupted")] * 2
    for job in ("0", "1"):
        assert all(json.loads(line) for line in _lines(sweep_dir / job / "results.jsonl"))


def _children_of(pid: int) -> list[int]:
    """Process ids whose parent is `pid` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_submitit_local_requeues_a_preempted_job_which_resumes_its_run(cli: Env) -> None:
    """SIGUSR2 is what SLURM sends before the time limit and on preemption (submitit's signal): the job
    stops cleanly, submitit requeues it in place, and the requeued job finishes the same MLflow run."""
    sweep_dir = cli.tmp / "submitit"
    args = ["-m", "launcher=submitit_local", "provider=scripted", f"provider.script={_script(cli, 0.6)}"]
    args += ["concurrency=1", "seed=11", f"tracking.uri={cli.uri}", f"hydra.sweep.dir={sweep_dir}"]
    results = sweep_dir / "0" / "results.jsonl"
    launcher = _start(cli, args)
    _wait_for_lines(results, 2, launcher)
    (controller,) = [int(p.name) for p in (sweep_dir / ".submitit").iterdir() if p.name.isdigit()]
    (job,) = _children_of(controller)  # submitit's controller runs the job in a child process
    os.kill(job, signal.SIGUSR2)
    first = _lines(results)
    _, launcher_err = launcher.communicate(timeout=120)
    assert launcher.returncode == 0, launcher_err

    job_err = (sweep_dir / ".submitit" / str(controller) / f"{controller}_0_log.err").read_text()
    assert "Traceback" not in job_err, job_err
    stops = [line for line in job_err.splitlines() if line.startswith("run_eval:")]
    assert stops == [
        "run_eval: stopped by SIGUSR2 (time limit or preemption); submitit requeues the job "
        "and it resumes from its results"
    ], job_err
    job_out = (sweep_dir / ".submitit" / str(controller) / f"{controller}_0_log.out").read_text()
    assert f"Requeued job {controller}" in job_out and "resuming run key" in job_out

    final = _lines(results)
    assert len(final) == N_ITEMS and len({json.loads(line)["key"] for line in final}) == N_ITEMS
    assert set(first) <= set(final)  # the first attempt's items were not called again
    parent, children = _sweep_runs(cli, sweep_dir)
    assert parent.info.status == "FINISHED" and parent.data.tags["status"] == "complete"
    assert len(children) == 1  # the requeued job reattached its run
    (child,) = children
    assert child.info.status == "FINISHED" and child.data.tags["status"] == "complete"
    assert child.data.tags["interruption"] == "SIGUSR2 (time limit or preemption)"
    assert child.data.metrics["n_items"] == N_ITEMS
