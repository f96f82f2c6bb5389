"""The real CLI (`scripts/run_eval.py`) on the demo data, into a tmp MLflow store.

One sweep and one joblib sweep run as subprocesses (the sweep and its launcher are what they test), once
per module and shared by the assertions; the jobs whose subject is what a job logs run in-process
(giant.evaluate), as does every bad setting but one, which shows the one line and exit 2 of the process.
"""

from __future__ import annotations

import csv
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from giant.errors import ConfigError
from giant.tracking.names import OUTPUT_DIR_TAG, PARENT_TAG, ROLE_TAG, SOURCE_RUN
from tests.helpers.cli import MAKE_TABLES, SCRIPT, SECRET, Env


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Env:
    return Env.make(tmp_path_factory.mktemp("cli"))


@pytest.fixture(scope="module")
def sweep(cli: Env) -> Path:
    sweep_dir = cli.tmp / "sweep"
    cli.run(
        "-m",
        "provider=random",
        "agent=giant,thumbnail",
        "agent.max_steps=3",
        "limit=3",
        f"tracking.uri={cli.uri}",
        f"hydra.sweep.dir={sweep_dir}",
    )
    return sweep_dir


@pytest.fixture(scope="module")
def single(cli: Env) -> Path:
    """The scripted provider on the balanced-accuracy demo task, with traces."""
    script = cli.tmp / "script.jsonl"
    lines = [
        {
            "reasoning": "look closer",
            "action": {"type": "crop", "x": 0, "y": 0, "width": 2000, "height": 2000},
        },
        {"reasoning": "done", "action": {"type": "answer", "text": '<response>{"isup_grade": 2}</response>'}},
    ]
    script.write_text("".join(json.dumps(line) + "\n" for line in lines))
    run_dir = cli.tmp / "single"
    cli.evaluate(
        run_dir,
        "provider=scripted",
        f"provider.script={script}",
        "dataset.benchmark=demo_count",
        "agent.max_steps=3",
        "limit=4",
        "tracking.traces=true",
    )
    return run_dir


@pytest.fixture(scope="module")
def job(cli: Env) -> str:
    """One job of the sweep's kind, in-process: its MLflow run's id."""
    return cli.evaluate(cli.tmp / "job", "provider=random", "agent=giant", "agent.max_steps=3", "limit=3")


def _children(cli: Env, parent_id: str) -> list:
    client = cli.client()
    experiment = client.get_experiment_by_name("giant")
    return client.search_runs([experiment.experiment_id], f"tags.`mlflow.parentRunId` = '{parent_id}'")


@pytest.mark.slow
@pytest.mark.subprocess_job
def test_sweep_has_one_parent_and_a_child_per_job(cli: Env, sweep: Path) -> None:
    info = json.loads((sweep / "mlflow_sweep.json").read_text())
    client = cli.client()
    parent = client.get_run(info["parent_run_id"])
    assert parent.data.tags[ROLE_TAG] == "sweep"
    assert parent.info.status == "FINISHED" and parent.data.tags["status"] == "complete"
    children = _children(cli, parent.info.run_id)
    assert len(children) == 2
    combos = {(c.data.tags["agent_mode"], c.data.tags["T"]) for c in children}
    assert combos == {("giant", "3"), ("thumbnail", "3")}
    for child in children:
        assert child.info.status == "FINISHED"
        assert child.data.tags[ROLE_TAG] == "job"
        assert child.data.tags["sweep_id"] == parent.info.run_id
        assert child.data.tags["provider"] == "random" and child.data.tags["dataset"] == "demo_shapes"
        assert child.data.tags["status"] == "complete"
        assert Path(child.data.tags[OUTPUT_DIR_TAG]).parent == sweep


def test_job_metrics_equal_summary_json(cli: Env, job: str) -> None:
    child = cli.client().get_run(job)
    out_dir = Path(child.data.tags[OUTPUT_DIR_TAG])
    summary = json.loads((out_dir / "summary.json").read_text())
    metrics = child.data.metrics
    assert metrics["metric"] == summary["metric"]["point"]
    assert metrics["metric_boot_std"] == summary["metric"]["std"]
    assert metrics["accuracy"] == summary["accuracy"]
    assert metrics["balanced_accuracy"] == summary["balanced_accuracy"]
    assert metrics["n_items"] == summary["n_items"] == 3
    assert metrics["steps_mean"] == summary["totals"]["steps_mean"]
    assert metrics["tokens_input"] == summary["totals"]["input_tokens"]
    assert child.data.tags["config_hash"] == summary["provenance"]["config_hash"]
    assert child.data.tags["dataset_hash"] == summary["provenance"]["dataset_hash"]


@pytest.mark.slow
@pytest.mark.subprocess_job
def test_make_tables_builds_table1_from_the_sweep(cli: Env, sweep: Path) -> None:
    """Issue 6: make_tables turns the sweep's runs into Table 1, one row per agent mode, each cell the
    run's bootstrap mean ± std in percent."""
    parent_id = json.loads((sweep / "mlflow_sweep.json").read_text())["parent_run_id"]
    out = cli.tmp / "tables"
    cli.run(
        "--tracking-uri", cli.uri, "--sweep-id", parent_id, "--no-log", "--out", str(out), script=MAKE_TABLES
    )
    children = _children(cli, parent_id)
    expected = {
        c.data.tags["agent_mode"]: (
            c.data.tags["model"],
            100 * c.data.metrics["metric_boot_mean"],
            100 * c.data.metrics["metric_boot_std"],
        )
        for c in children
    }
    assert len(expected) == len(children) == 2  # one job per mode

    with (out / "table1.csv").open(newline="") as f:
        header, *csv_rows = list(csv.reader(f))
    column = header.index("demo_shapes")
    md_rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in (out / "table1.md").read_text().splitlines()[2:]
        if line.startswith("|")
    ]
    for rows in (csv_rows, md_rows):
        assert sorted(row[0] for row in rows) == sorted(expected)
        for row in rows:
            model, mean, std = expected[row[0]]
            assert row[1] == model
            cell = re.fullmatch(r"(\d+\.\d) ± (\d+\.\d)", row[column])
            assert cell, row
            assert abs(float(cell[1]) - mean) <= 0.05 + 1e-9 and abs(float(cell[2]) - std) <= 0.05 + 1e-9


def test_job_params_and_artifacts(cli: Env, job: str) -> None:
    client = cli.client()
    child = client.get_run(job)
    params = child.data.params
    assert params["agent.max_steps"] == child.data.tags["T"]
    assert params["provider.name"] == "random" and params["limit"] == "3"
    assert params["tracking.uri"] == cli.uri
    top = {a.path for a in client.list_artifacts(child.info.run_id)}
    assert {"results.jsonl", "summary.json", "predictions.csv", "config", "trajectories"} <= top
    hydra_files = {a.path for a in client.list_artifacts(child.info.run_id, "config/hydra")}
    assert {"config/hydra/config.yaml", "config/hydra/overrides.yaml"} <= hydra_files
    trajectories = client.list_artifacts(child.info.run_id, "trajectories")
    assert len(trajectories) == 3
    inside = {
        Path(a.path).name for a in client.list_artifacts(child.info.run_id, f"{trajectories[0].path}/run0")
    }
    assert {"trajectory.json", "trajectory.html"} <= inside


def test_single_run_scripted_with_confusion_matrix_and_traces(cli: Env, single: Path) -> None:
    summary = json.loads((single / "summary.json").read_text())
    assert summary["metric_name"] == "balanced_accuracy" and summary["n_items"] == 4
    client = cli.client()
    runs = client.search_runs(
        [client.get_experiment_by_name("giant").experiment_id], f"tags.output_dir = '{single}'"
    )
    assert len(runs) == 1
    run = runs[0]
    assert PARENT_TAG not in run.data.tags and run.data.tags["sweep_id"] == ""
    assert run.data.tags["provider"] == "scripted" and run.data.tags["dataset"] == "demo_count"
    assert run.data.metrics["metric"] == summary["metric"]["point"]
    assert run.data.metrics["crops_per_item"] == summary["totals"]["crops_per_item"] == 1.0
    top = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert "confusion_matrix.png" in top
    traces = client.search_traces(locations=[run.info.experiment_id], max_results=50)
    mine = [t for t in traces if t.info.trace_metadata.get(SOURCE_RUN) == run.info.run_id]
    assert len(mine) == 4
    spans = client.get_trace(mine[0].info.trace_id).data.spans
    assert len(spans) == 1 + 2  # the item, then one span per provider call (crop, answer)


@pytest.mark.slow
@pytest.mark.subprocess_job
def test_no_secret_in_store_or_outputs(cli: Env, sweep: Path, single: Path, job: str) -> None:
    needle = SECRET.encode()
    leaks = [p for p in cli.tmp.rglob("*") if p.is_file() and p.suffix != ".svs" and needle in p.read_bytes()]
    assert leaks == []
    assert (cli.tmp / "store" / "mlflow.db").is_file()


@pytest.mark.slow
@pytest.mark.subprocess_job
def test_sweep_under_joblib_launcher(cli: Env) -> None:
    sweep_dir = cli.tmp / "joblib"
    cli.run(
        "-m",
        "launcher=joblib",
        "provider=random",
        "agent=thumbnail",
        "agent.thumbnail_size=250,500",
        "limit=2",
        f"tracking.uri={cli.uri}",
        f"hydra.sweep.dir={sweep_dir}",
    )
    info = json.loads((sweep_dir / "mlflow_sweep.json").read_text())
    children = _children(cli, info["parent_run_id"])
    assert sorted(c.data.params["agent.thumbnail_size"] for c in children) == ["250", "500"]
    assert all(c.info.status == "FINISHED" for c in children)
    assert cli.client().get_run(info["parent_run_id"]).info.status == "FINISHED"


@pytest.mark.subprocess_job
def test_bad_config_is_one_line_exit_2(cli: Env) -> None:
    """The process: one line on stderr, exit 2, and a bad sweep job is found before any job runs."""
    args = ["-m", "agent.max_steps=2,-1", f"tracking.uri={cli.uri}", f"hydra.sweep.dir={cli.tmp / 'never'}"]
    proc = cli.run(*args, check=False)
    assert proc.returncode == 2
    assert not (cli.tmp / "never").exists()
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "(sweep job: agent.max_steps=-1" in lines[0], proc.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["agent.max_steps=-1"], "agent.max_steps=-1"),
        (["provider=opneai"], "unknown provider 'opneai'"),
        (["agent.crop_size=20000"], "agent.crop_size=20000"),
        (
            ["agent.maxsteps=3"],
            "unknown key 'agent.maxsteps': no such setting; did you mean agent.max_steps?",
        ),
    ],
)
def test_bad_config_is_one_config_error_line(cli: Env, args: list[str], expected: str) -> None:
    """The ConfigError that the command line prints as its one line with exit 2 (giant.cli.run)."""
    with pytest.raises(ConfigError) as err:
        cli.job(cli.tmp / "bad", *args, f"tracking.uri={cli.uri}")
    assert len(str(err.value).splitlines()) == 1 and expected in str(err.value)


def test_missing_api_key_is_one_line(cli: Env) -> None:
    without_key = Env(cli.tmp, {k: v for k, v in cli.env.items() if k != "OPENAI_API_KEY"})
    with pytest.raises(ConfigError) as err:
        without_key.job(cli.tmp / "no_key", "provider=openai", "limit=1", f"tracking.uri={cli.uri}")
    assert len(str(err.value).splitlines()) == 1 and "OPENAI_API_KEY" in str(err.value)


@pytest.mark.slow
@pytest.mark.subprocess_job
def test_ctrl_c_is_one_line_and_the_rerun_resumes(cli: Env) -> None:
    script = cli.tmp / "slow.jsonl"
    step = {"reasoning": "done", "action": {"type": "answer", "text": '<response>{"answer": 1}</response>'}}
    script.write_text(json.dumps({**step, "sleep": 0.5}) + "\n")
    run_dir = cli.tmp / "interrupted"
    args = ["provider=scripted", f"provider.script={script}", "concurrency=1", "seed=99"]
    args += [f"tracking.uri={cli.uri}", f"hydra.run.dir={run_dir}"]
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), *args], cwd=cli.tmp, env=cli.env, stderr=subprocess.PIPE, text=True
    )
    results = run_dir / "results.jsonl"
    deadline = time.monotonic() + 120
    while not (results.is_file() and results.read_text().count("\n") >= 2) and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1].startswith("run_eval: interrupted"), stderr
    done = results.read_text().count("\n")
    assert 2 <= done < 8
    again = cli.run(*args)
    assert "resuming run key" in again.stdout
    assert results.read_text().count("\n") == 8
