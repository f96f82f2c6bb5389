"""The CONCH tool end to end: scripts/ask.py through the real CLI (a Hydra subprocess) and the job of
scripts/run_eval.py in-process (giant.evaluate), with the scripted provider sending the conch action and
the tiny random model."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from giant.tools.conch.load import INSTALL
from giant.wsi.synthetic import write_synthetic_slide
from tests.helpers.cli import ASK, MAKE_TABLES, Ended, Env, clean_env, run_script

from .conftest import needs_torch

HYPOTHESES = ["tumour glands", "fat"]
STEPS = [
    {"reasoning": "zoom", "action": {"type": "crop", "x": 0, "y": 0, "width": 1500, "height": 1000}},
    {"reasoning": "ask CONCH", "action": {"type": "conch", "hypotheses": HYPOTHESES}},
    {"reasoning": "done", "action": {"type": "answer", "text": '<response>{"answer": 1}</response>'}},
]
TOOL = ["agent.tools=[conch]", "tools.conch.weights=tiny-random", "tools.conch.device=cpu"]


def _env(cwd: Path, **extra_env: str) -> dict[str, str]:
    return clean_env(GIANT_CACHE_DIR=str(cwd / "cache"), GIANT_OUTPUT_DIR=str(cwd / "outputs"), **extra_env)


def _run(script: Path, args: list[str], cwd: Path, **extra_env: str) -> subprocess.CompletedProcess[str]:
    return run_script(script, *args, cwd=cwd, env=_env(cwd, **extra_env))


def _job(cwd: Path, folder: Path, *args: str) -> Ended:
    """The job of `run_eval.py args`, in-process, into `folder`."""
    return Env(cwd, _env(cwd)).ended(folder, *args)


@pytest.fixture(scope="module")
def slide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_synthetic_slide(tmp_path_factory.mktemp("slide") / "tissue.svs", 3000, 2000, seed=4)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.jsonl"
    path.write_text("".join(json.dumps(step) + "\n" for step in STEPS))
    return path


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_ask_runs_the_tool_end_to_end(slide: Path, script: Path, tmp_path: Path) -> None:
    needs_torch()
    out = tmp_path / "job"
    args = [f"slide={slide}", "question=Which tissue?", "options=[colon,fat]", "provider=scripted"]
    proc = _run(ASK, [*args, f"provider.script={script}", *TOOL, f"hydra.run.dir={out}"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "steps: 3 (3 provider calls, 1 crops)" in proc.stdout
    traj = json.loads((out / "trajectory.json").read_text())
    [call] = traj["tool_calls"]
    assert call["model"] == "tiny-random (seed 0)" and call["input_size"] == 64
    assert call["hypotheses"] == HYPOTHESES and len(set(call["scores"])) == 2
    assert call["region"] == {"x": 250, "y": 0, "w": 1000, "h": 1000}
    ranked = sorted(zip(call["scores"], HYPOTHESES, strict=True), reverse=True)
    printed = "; ".join(f"{score:+.3f} {text}" for score, text in ranked)
    assert f"conch (call 2, crop 1): {printed}" in proc.stdout.splitlines()
    page = (out / "trajectory.html").read_text()
    assert all(f"<td>{score:+.3f}</td>" in page for score in call["scores"])
    # the same image and texts give the same scores in a second process
    again = tmp_path / "again"
    proc = _run(ASK, [*args, f"provider.script={script}", *TOOL, f"hydra.run.dir={again}"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((again / "trajectory.json").read_text())["tool_calls"][0]["scores"] == call["scores"]


@pytest.mark.slow
def test_run_eval_records_the_tool_in_mlflow_and_tables(script: Path, tmp_path: Path) -> None:
    needs_torch()
    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    out = tmp_path / "run"
    args = [
        "provider=scripted",
        f"provider.script={script}",
        *TOOL,
        "agent.max_steps=20",
        "agent.crop_size=1000",
    ]
    end = _job(tmp_path, out, *args, "limit=2", f"tracking.uri={uri}")
    assert end.code == 0, end
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in records] == ["answered", "answered"]
    report = (out / "report.html").read_text()
    assert "<h2>CONCH calls</h2><p>2 calls in 2 item-runs (tiny-random (seed 0))" in report
    for record in records:
        traj = json.loads((out / record["trajectory"] / "trajectory.json").read_text())
        [call] = traj["tool_calls"]
        best = max(zip(call["scores"], call["hypotheses"], strict=True))
        assert f"{best[0]:+.3f}  {best[1]}" in report
    [run] = MlflowClient(uri).search_runs(MlflowClient(uri).get_experiment_by_name("giant").experiment_id)
    params = run.data.params
    assert params["agent.tools"] == "['conch']" and params["tools.conch.weights"] == "tiny-random"
    assert params["tools.conch.max_hypotheses"] == "8"
    tables = tmp_path / "tables"
    made = _run(
        MAKE_TABLES, ["--tracking-uri", uri, "--no-log", "--published", "--out", str(tables)], tmp_path
    )
    assert made.returncode == 0, made.stderr[-3000:]
    assert "| giant + CONCH | scripted |" in (tables / "table1.md").read_text()
    assert "paper: GIANT x1 + CONCH (T=20, S=1000)" in (tables / "table1_vs_published.md").read_text()


def test_missing_weights_stop_the_run_before_any_item(script: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    missing = tmp_path / "nowhere" / "pytorch_model.bin"
    args = [
        "provider=scripted",
        f"provider.script={script}",
        "agent.tools=[conch]",
        f"tools.conch.weights={missing}",
    ]
    end = _job(tmp_path, out, *args, "tracking.enabled=false")
    if end.code != 2:
        needs_torch()  # without PyTorch the first line says to install it instead
    assert end.code == 2, end
    [line] = (end.line or "").splitlines()
    assert line.startswith("run_eval: ") and (
        f"tools.conch.weights={missing}: no such file" in line or "pip install" in line
    )
    assert not (out / "results.jsonl").exists()


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_without_pytorch_asking_for_the_tool_names_the_extra(
    slide: Path, script: Path, tmp_path: Path
) -> None:
    fake = tmp_path / "no_torch" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named torch')\n")
    out = tmp_path / "job"
    args = [
        f"slide={slide}",
        "question=Which tissue?",
        "provider=scripted",
        f"provider.script={script}",
        *TOOL,
    ]
    proc = _run(ASK, [*args, f"hydra.run.dir={out}"], tmp_path, PYTHONPATH=str(fake.parent))
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line == f"ask: agent.tools=[conch] needs PyTorch, which is not installed: {INSTALL}"
    assert not (out / "trajectory.json").exists()
