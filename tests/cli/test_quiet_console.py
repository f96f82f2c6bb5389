"""The console of a run (scripts/run_eval.py in a subprocess, the openai SDK against a loopback
Responses API): the progress bar, giant's lines and the result, not one httpx2 line per provider call
nor MLflow's store notes; `verbose=true` or `hydra.verbose=httpx2` brings the calls' lines back, and
the job's log file keeps them either way. Also the console filter itself (giant/cli/console.py)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from giant.cli.console import LibraryNotes
from giant.tracking.names import EXPERIMENT_KIND_TAG, MODEL_DEVELOPMENT
from tests.tracking.responses_peer import responses_peer

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "run_eval.py"
T = 3  # calls per item-run
ITEMS = 2
HTTP_LINE = "HTTP Request: POST http://127.0.0.1"


def _run(tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """A fresh job (its own cache, so nothing is answered from a ledger) with a fresh sqlite store."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "GIANT_", "HYDRA_"))}
    env.update(
        OPENAI_API_KEY="sk-test-quiet-console",
        GIANT_CACHE_DIR=str(tmp_path / "cache"),
        MLFLOW_TRACKING_URI=f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}",
    )
    job = tmp_path / "job"
    settings = ["provider=openai", "provider.reasoning_effort=null", f"agent.max_steps={T}"]
    settings += [f"limit={ITEMS}", "bootstrap_replicates=10", f"hydra.run.dir={job}"]
    with responses_peer(T) as base_url:
        proc = subprocess.run(
            [sys.executable, str(SCRIPT), *settings, f"provider.base_url={base_url}", *extra],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, job


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_a_run_prints_no_line_per_http_request(tmp_path: Path) -> None:
    proc, job = _run(tmp_path)
    console = proc.stdout + proc.stderr
    assert HTTP_LINE not in console
    assert "INFO" not in console, console  # no library's notes (MLflow's "Creating initial ... tables")
    (result,) = proc.stdout.splitlines()  # the result line is all of stdout; the bar is on stderr
    assert result.startswith(f"demo_shapes giant T={T}") and "MLflow run" in result
    assert "item-run" in proc.stderr
    # The job's log file keeps every call.
    assert (job / "run_eval.log").read_text().count(HTTP_LINE) == T * ITEMS
    # The run's experiment, in a real store created by this run, is tagged as model development.
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("giant")
    assert experiment is not None and experiment.tags[EXPERIMENT_KIND_TAG] == MODEL_DEVELOPMENT


@pytest.mark.subprocess_job
@pytest.mark.slow
@pytest.mark.parametrize("loud", ["verbose=true", "hydra.verbose=httpx2"])
def test_verbose_brings_the_request_lines_back(tmp_path: Path, loud: str) -> None:
    proc, _ = _run(tmp_path, loud)
    assert proc.stdout.count(HTTP_LINE) == T * ITEMS


@pytest.mark.subprocess_job
def test_a_verbose_that_is_not_a_boolean_is_one_line_and_exit_2(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "GIANT_", "HYDRA_"))}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "verbose=loud", f"hydra.run.dir={tmp_path / 'never'}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "run_eval: verbose=loud: give true or false (or hydra.verbose=LOGGER for one library)"
    ]
    assert not (tmp_path / "never").exists()


def _record(name: str, level: int) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, "note", None, None)


def test_the_console_filter_keeps_giant_hydra_and_warnings() -> None:
    quiet = LibraryNotes()
    assert quiet.filter(_record("giant.job", logging.INFO))
    assert quiet.filter(_record("__main__", logging.INFO))
    assert quiet.filter(_record("hydra._internal.core_plugins.basic_launcher", logging.INFO))
    assert quiet.filter(_record("httpx2", logging.WARNING))
    for name in (
        "httpx2",
        "openai._base_client",
        "anthropic",
        "mlflow.store.db.utils",
        "filelock",
        "giantess",
    ):
        assert not quiet.filter(_record(name, logging.INFO)), name
    loud = LibraryNotes(["httpx2"])
    assert loud.filter(_record("httpx2", logging.DEBUG)) and not loud.filter(_record("openai", logging.INFO))


def test_a_record_from_before_verbose_still_reads_for_a_rescore() -> None:
    from hydra import compose, initialize_config_dir

    from giant.config import CONF_DIR, RunSettings
    from giant.rescore_job import settings_of

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        record = RunSettings.from_config(compose("config")).record()
    assert record.pop("verbose") is False
    assert settings_of(record).run.verbose is False
