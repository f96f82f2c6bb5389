"""`server=vllm`: each job of a sweep (the real CLI) starts its own server (a fake `vllm` on PATH that
serves the loopback vLLM stub), runs against it and stops it, also when the job fails (the job of
scripts/run_eval.py in-process, giant.evaluate, with the exit code and line the command line gives)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import SCRIPT, Ended, Env
from tests.llm.fake_vllm import install

MODELS = ("Qwen/Qwen2.5-VL-7B-Instruct", "OpenGVLab/InternVL3-8B")
TIMEOUT = 300


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "GIANT_", "HYDRA_", "FAKE_"))}
    env.update(
        PATH=f"{tmp / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        FAKE_VLLM_PIDS=str(tmp / "pids"),
        GIANT_CACHE_DIR=str(tmp / "cache"),
        GIANT_OUTPUT_DIR=str(tmp / "outputs"),
        GIANT_MULTIRUN_DIR=str(tmp / "multirun"),
        **extra,
    )
    return env


def _run(tmp: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    install(tmp / "bin")
    base = ("server=vllm", "provider=openai_compatible", "agent.max_steps=3", "limit=2")
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args, *base, f"tracking.uri=sqlite:///{tmp / 'mlflow.db'}"],
        cwd=tmp,
        env=_env(tmp, **extra),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def _job(tmp: Path, folder: Path, *args: str, **extra: str) -> tuple[Ended, str]:
    """`_run(tmp, *args)`'s job in-process into `folder`: its end and what it printed."""
    import contextlib
    import io

    install(tmp / "bin")
    base = ("server=vllm", "provider=openai_compatible", "agent.max_steps=3", "limit=2")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        end = Env(tmp, _env(tmp, **extra)).ended(
            folder, *args, *base, f"tracking.uri=sqlite:///{tmp / 'mlflow.db'}"
        )
    return end, printed.getvalue()


def _started(tmp: Path) -> list[int]:
    return [int(line) for line in (tmp / "pids").read_text().split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.subprocess_job
def test_a_sweep_serves_each_model_in_its_job_and_stops_it(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    proc = _run(tmp_path, "-m", f"provider.model={','.join(MODELS)}", f"hydra.sweep.dir={sweep}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    pids = _started(tmp_path)
    assert len(pids) == len(MODELS) and not any(_alive(pid) for pid in pids)
    for job, model in enumerate(MODELS):
        log = (sweep / str(job) / "server.log").read_text()
        assert f"fake vllm: {model} on 127.0.0.1:" in log  # its own model, on its own port
        summary = json.loads((sweep / str(job) / "summary.json").read_text())
        assert summary["complete"] and summary["n_items"] == 2
        assert summary["totals"]["calls_per_min"] > 0
        resolved = json.loads((sweep / str(job) / "resolved_config.json").read_text())
        assert resolved["provider"]["base_url"].startswith("http://127.0.0.1:")


def test_gpu_price_makes_the_cost(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    end, out = _job(
        tmp_path, run_dir, f"provider.model={MODELS[0]}", "provider.gpu_hour_usd=3.6", "provider.gpus=2"
    )
    assert end.code == 0, end
    totals = json.loads((run_dir / "summary.json").read_text())["totals"]
    assert totals["cost_usd"] == totals["gpu_cost_usd"] == pytest.approx(totals["active_s"] * 2 * 3.6 / 3600)
    assert "$" in out and "unknown" not in out.splitlines()[-1]


def test_a_job_that_fails_after_the_start_stops_its_server(tmp_path: Path) -> None:
    end, _ = _job(  # the preflight stops it
        tmp_path, tmp_path / "run", f"provider.model={MODELS[0]}", FAKE_VLLM_IMAGE_LIMIT="1"
    )
    assert end.code == 2 and "--limit-mm-per-prompt" in (end.line or "")
    [pid] = _started(tmp_path)
    assert not _alive(pid)


@pytest.mark.parametrize(
    ("mode", "said"),
    [("silent", "no answer from http://127.0.0.1:"), ("crash", "exited with code 1 before answering")],
)
def test_a_server_that_never_answers_is_one_line_naming_its_log(tmp_path: Path, mode: str, said: str) -> None:
    run_dir = tmp_path / "run"
    end, _ = _job(
        tmp_path, run_dir, f"provider.model={MODELS[0]}", "server.startup_timeout_s=3", FAKE_VLLM_MODE=mode
    )
    assert end.code == 2
    [line] = (end.line or "").splitlines()
    assert said in line and line.endswith(f"see {run_dir / 'server.log'}")
    [pid] = _started(tmp_path)
    assert not _alive(pid)
