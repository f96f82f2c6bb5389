"""Exit codes a script can trust (issue 23): the real CLI in subprocesses, with a sqlite MLflow store.

A sweep's job that ends with a config error or a RunStopped records its outcome and the sweep goes on;
the sweep then names the jobs that did not complete in one line and exits with the highest code. A
signal between two jobs ends the sweep with one line and 130/143, its parent run KILLED, and the same
command resumes it. A folder that cannot be written is one line and exit 2 before any MLflow run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from mlflow.entities import Run
from mlflow.tracking import MlflowClient

import giant
from giant.data.demo import build_demo
from giant.errors import ConfigError
from tests.helpers.cli import ROOT, SCRIPT, TIMEOUT, Env

ANSWER = {"reasoning": "done", "action": {"type": "answer", "text": '<response>{"answer": 1}</response>'}}

# A CLI run whose job raises RunStopped the way giant.job.run_job does for a run it could not
# complete: agent.max_steps=2 runs to the end and then reports item-runs left unmeasured (exit 4),
# agent.max_steps=3 is stopped before its first item (exit 3), any other value runs as usual.
STOPPING_CLI = textwrap.dedent(
    """
    import runpy, sys

    import giant.job
    from giant.errors import RunStopped

    real_run_job = giant.job.run_job

    def run_job(cfg, context):
        if cfg.agent.max_steps == 3:
            raise RunStopped("the provider refused the key; fix OPENAI_API_KEY and rerun", 3)
        summary = real_run_job(cfg, context)
        if cfg.agent.max_steps == 2:
            raise RunStopped("budget stop: 1 of 2 item-runs unmeasured; raise budget_usd and rerun", 4)
        return summary

    giant.job.run_job = run_job
    sys.argv[0] = sys.argv.pop(1)
    runpy.run_path(sys.argv[0], run_name="__main__")
    """
)


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Env:
    # PYTHONPATH: the sweeps below add tests.cli.between_jobs as a Hydra callback
    return Env.make(tmp_path_factory.mktemp("outcomes"), PYTHONPATH=str(ROOT))


def _stderr_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """stderr without the progress bars (one carriage-return-joined line per job)."""
    return [line for line in proc.stderr.strip().splitlines() if "item-run/s" not in line]


def _parent(cli: Env, sweep_dir: Path) -> tuple[Run, list[Run]]:
    client = MlflowClient(cli.uri)
    info = json.loads((sweep_dir / "mlflow_sweep.json").read_text())
    children = client.search_runs(
        [info["experiment_id"]], f"tags.`mlflow.parentRunId` = '{info['parent_run_id']}'"
    )
    return client.get_run(info["parent_run_id"]), children


def _not_a_folder(cli: Env) -> Path:
    """A path whose parent is a regular file: no process, root included, can create it."""
    blocker = cli.tmp / "a_file"
    blocker.write_text("not a folder\n")
    return blocker / "below"


@pytest.mark.subprocess_job
@pytest.mark.parametrize(
    ("args", "setting"),
    [
        (["-m", "agent.max_steps=2,3", "paths.multirun_dir={bad}"], "paths.multirun_dir={bad}"),
        (["-m", "agent.max_steps=2,3", "paths.cache_dir={bad}"], "paths.cache_dir={bad}"),
    ],
)
def test_a_folder_that_cannot_be_written_is_one_line_exit_2_before_any_mlflow_run(
    cli: Env, args: list[str], setting: str
) -> None:
    bad = _not_a_folder(cli)
    store = cli.tmp / "unwritable_store" / "mlflow.db"
    proc = cli.run(
        *[arg.format(bad=bad) for arg in args], "limit=1", f"tracking.uri=sqlite:///{store}", check=False
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"run_eval: {setting.format(bad=bad)}: cannot write to {bad}"), lines[0]
    assert "Not a directory" in lines[0]
    assert not store.exists()  # no MLflow store, let alone a parent run left RUNNING


@pytest.mark.parametrize("setting", ["paths.output_dir", "paths.cache_dir", "hydra.run.dir"])
def test_a_folder_that_cannot_be_written_is_one_config_error_line_before_any_mlflow_run(
    cli: Env, setting: str
) -> None:
    """A single run's folders, in-process: the ConfigError the command line prints with exit 2."""
    bad = _not_a_folder(cli)
    store = cli.tmp / "unwritable_store" / "mlflow.db"
    with cli.environment(), pytest.raises(ConfigError) as err:
        giant.evaluate([f"{setting}={bad}", "limit=1", f"tracking.uri=sqlite:///{store}"])
    (line,) = str(err.value).splitlines()
    assert line.startswith(f"{setting}={bad}: cannot write to {bad}") and "Not a directory" in line, line
    assert not store.exists()  # no MLflow store, let alone a run left RUNNING


@pytest.mark.subprocess_job
@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_multirun_dir_is_one_line_exit_2(cli: Env) -> None:
    read_only = cli.tmp / "read_only"
    read_only.mkdir()
    read_only.chmod(0o555)
    store = cli.tmp / "read_only_store" / "mlflow.db"
    try:
        proc = cli.run(
            "-m", "agent.max_steps=2,3", f"paths.multirun_dir={read_only}", f"tracking.uri=sqlite:///{store}",
            check=False,
        )  # fmt: skip
    finally:
        read_only.chmod(0o755)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"run_eval: paths.multirun_dir={read_only}: "), lines
    assert "Permission denied" in lines[0] and not store.exists()


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_a_job_with_a_config_error_does_not_end_the_sweep(cli: Env) -> None:
    """The first job's script is not JSON (found inside the job, when its provider is built): the
    second job still runs, the sweep exits 2 and names job 0 in its last line, and the parent run is
    FAILED although job 0 never opened a run of its own."""
    bad = cli.tmp / "not_json.jsonl"
    bad.write_text("this is not json\n")
    good = cli.tmp / "answer.jsonl"
    good.write_text(json.dumps(ANSWER) + "\n")
    sweep_dir = cli.tmp / "config_error"
    proc = cli.run(
        "-m", "provider=scripted", f"provider.script={bad},{good}", "limit=2",
        f"tracking.uri={cli.uri}", f"hydra.sweep.dir={sweep_dir}", check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    last = _stderr_lines(proc)[-1]
    assert last.startswith(
        f"run_eval: 1 of 2 sweep jobs did not complete: #0 provider.script={bad} (exit 2: "
    ), last
    assert "line 1: invalid" in last and str(good) not in last

    assert len((sweep_dir / "1" / "results.jsonl").read_text().splitlines()) == 2  # job 1 ran
    outcomes = [json.loads((sweep_dir / "outcomes" / f"{n}.json").read_text()) for n in (0, 1)]
    assert [(o["job"], o["code"], o["output_dir"]) for o in outcomes] == [
        (0, 2, str(sweep_dir / "0")),
        (1, 0, str(sweep_dir / "1")),
    ]
    assert f"provider.script={bad}" in outcomes[0]["overrides"]
    parent, children = _parent(cli, sweep_dir)
    assert [(c.info.status, c.data.tags["status"]) for c in children] == [("FINISHED", "complete")]
    assert parent.info.status == "FAILED" and parent.data.tags["status"] == "failed"
    assert (parent.data.metrics["n_jobs"], parent.data.metrics["n_failed"]) == (2, 1)


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_a_job_with_missing_slides_does_not_end_the_sweep_which_exits_4(cli: Env) -> None:
    """run_job's own RunStopped: job 0's slide folder lacks one of its two slides, so it ends with
    an item-run unmeasured (exit 4); job 1 still runs, and the parent run is incomplete."""
    demo = build_demo(cli.tmp / "cache" / "demo")  # where the CLI builds it (GIANT_CACHE_DIR)
    partial = cli.tmp / "partial_slides"
    shutil.copytree(demo.wsi_root, partial)
    (partial / "demo_01.svs").unlink()  # the slide of the first demo_shapes item
    sweep_dir = cli.tmp / "missing_slides"
    proc = cli.run(
        "-m", "provider=random", "limit=2", "seed=41", f"dataset.csv_path={demo.csv_path}",
        f"dataset.wsi_root={partial},{demo.wsi_root}", f"tracking.uri={cli.uri}",
        f"hydra.sweep.dir={sweep_dir}", check=False,
    )  # fmt: skip
    assert proc.returncode == 4, proc.stderr
    assert "Traceback" not in proc.stderr
    last = _stderr_lines(proc)[-1]
    assert last.startswith(
        f"run_eval: 1 of 2 sweep jobs did not complete: #0 dataset.wsi_root={partial} (exit 4: incomplete: "
        f"1 of 2 item-runs have no slide under {partial}"
    ), last
    parent, children = _parent(cli, sweep_dir)
    assert sorted(c.data.tags["status"] for c in children) == ["complete", "incomplete"]
    assert parent.info.status == "FINISHED" and parent.data.tags["status"] == "incomplete"
    assert (parent.data.metrics["n_jobs"], parent.data.metrics["n_incomplete"]) == (2, 1)


def _stopping_cli(cli: Env, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", STOPPING_CLI, str(SCRIPT), *args, "provider=random", "limit=2"],
        cwd=cli.tmp,
        env=cli.env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_a_stopped_single_run_is_one_line_with_its_code(cli: Env) -> None:
    proc = _stopping_cli(cli, "agent.max_steps=3", f"tracking.uri={cli.uri}")
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "run_eval: the provider refused the key; fix OPENAI_API_KEY and rerun"
    ]


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_a_sweep_exits_with_the_highest_code_of_its_jobs_without_mlflow(cli: Env) -> None:
    """Jobs stopped with 4 and 3 do not end the sweep: the last job runs, one line names the two,
    and the exit code is 4; with tracking off, as the outcomes do not come from MLflow."""
    sweep_dir = cli.tmp / "stopped"
    proc = _stopping_cli(
        cli, "-m", "agent.max_steps=2,3,4", "tracking.enabled=false", f"hydra.sweep.dir={sweep_dir}"
    )
    assert proc.returncode == 4, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in _stderr_lines(proc) if line.startswith("run_eval:")]
    assert lines == [
        "run_eval: budget stop: 1 of 2 item-runs unmeasured; raise budget_usd and rerun",
        "run_eval: the provider refused the key; fix OPENAI_API_KEY and rerun",
        # one line per distinct cause, naming the jobs it stopped
        "run_eval: 1 of 3 sweep jobs did not complete: #0 agent.max_steps=2 (exit 4: budget stop: 1 of 2 "
        "item-runs unmeasured; raise budget_usd and rerun)",
        "run_eval: 1 of 3 sweep jobs did not complete: #1 agent.max_steps=3 (exit 3: the provider "
        "refused the key; fix OPENAI_API_KEY and rerun)",
    ]
    assert _stderr_lines(proc)[-2:] == lines[-2:]
    assert (sweep_dir / "2" / "summary.json").is_file()  # the job after the stopped ones ran
    assert not (sweep_dir / "mlflow_sweep.json").exists()


def _sweep_dirs(cli: Env, name: str) -> list[Path]:
    """The sweep folders under this test's multirun_dir, oldest first (`<date>/<time>` names)."""
    return sorted(path.parent for path in (cli.tmp / name).glob("*/*/multirun.yaml"))


@pytest.mark.subprocess_job
@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "code", "reason"), [(signal.SIGINT, 130, "Ctrl-C"), (signal.SIGTERM, 143, "SIGTERM")]
)
def test_a_signal_between_two_jobs_ends_the_sweep_cleanly_and_the_same_command_resumes(
    cli: Env, signum: signal.Signals, code: int, reason: str
) -> None:
    """The signal lands in Hydra's code after job 0 has closed its run and before job 1 starts (a
    callback holds the sweep there): one line saying how to resume, the parent run KILLED. The same
    command, run again into a new sweep folder, carries job 0's items over and runs job 1."""
    name = f"between_{reason}"
    marker = cli.tmp / f"{name}.marker"
    env = {**cli.env, "GIANT_MULTIRUN_DIR": str(cli.tmp / name)}
    args = [
        "-m",
        "provider=random",
        "limit=2",
        "agent.max_steps=2,3",
        f"seed={code}",
        f"tracking.uri={cli.uri}",
    ]
    pause = [
        "+hydra.callbacks.pause._target_=tests.cli.between_jobs.PauseAfterFirstJob",
        f"+hydra.callbacks.pause.marker={marker}",
    ]
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), *args, *pause],
        cwd=cli.tmp,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + TIMEOUT
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr, stderr
    stops = [line for line in stderr.splitlines() if line.startswith("run_eval:")]
    assert stops == [stderr.strip().splitlines()[-1]], stderr
    assert "rerun the same command to resume" in stops[0], stderr

    (sweep_dir,) = _sweep_dirs(cli, name)
    parent, children = _parent(cli, sweep_dir)
    assert parent.info.status == "KILLED", parent.data.tags
    assert parent.data.tags["status"] == "interrupted" and parent.data.tags["interruption"] == reason
    assert [(c.info.status, c.data.tags["status"]) for c in children] == [("FINISHED", "complete")]
    assert not (sweep_dir / "1").exists()  # job 1 never started
    first = (sweep_dir / "0" / "results.jsonl").read_text().splitlines()

    time.sleep(1.0)  # a new `<time>` sweep folder, as for a user who runs the command again
    again = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=cli.tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("resuming run key") == 1, again.stdout  # job 0, from the first sweep
    first_dir, rerun_dir = _sweep_dirs(cli, name)
    assert first_dir == sweep_dir
    assert (rerun_dir / "0" / "results.jsonl").read_text().splitlines() == first  # carried over, not called
    assert len((rerun_dir / "1" / "results.jsonl").read_text().splitlines()) == 2
    parent, children = _parent(cli, rerun_dir)
    assert parent.info.status == "FINISHED" and parent.data.tags["status"] == "complete"
    assert len(children) == 2
