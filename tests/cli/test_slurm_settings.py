"""A SLURM sweep whose requeue signal would come at once (`hydra.launcher.signal_delay_s` at or above
the job's time limit, `hydra.launcher.timeout_min` * 60) is one line and exit 2 before anything is
submitted: no SLURM cluster is needed to see it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose

from giant.cli.callbacks import check_launcher
from giant.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "run_eval.py"


@pytest.mark.subprocess_job
def test_a_signal_at_the_time_limit_stops_the_sweep_before_submission(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "GIANT_", "HYDRA_"))}
    env.update(GIANT_CACHE_DIR=str(tmp_path / "cache"), PATH="/nonexistent")  # no sbatch to call either
    sweep = tmp_path / "sweep"
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "-m",
            "launcher=submitit_slurm",
            "hydra.launcher.timeout_min=2",
            "hydra.launcher.signal_delay_s=120",
            "agent.max_steps=1,2",
            f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}",
            f"hydra.sweep.dir={sweep}",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("run_eval: hydra.launcher.signal_delay_s=120: ")
    assert "hydra.launcher.timeout_min=2, 120 s" in line and "raise hydra.launcher.timeout_min" in line
    assert not sweep.exists()  # nothing submitted: no sweep folder, no submitit files
    assert not (tmp_path / "mlflow.db").exists()  # and no MLflow parent run


@pytest.mark.parametrize(
    ("overrides", "refused"),
    [
        (["hydra.launcher.timeout_min=2", "hydra.launcher.signal_delay_s=119"], False),
        (["hydra.launcher.timeout_min=2", "hydra.launcher.signal_delay_s=120"], True),
        (["hydra.launcher.timeout_min=1", "hydra.launcher.signal_delay_s=3600"], True),
        ([], False),  # the shipped 720 min and 120 s
    ],
)
def test_the_signal_must_come_before_the_time_limit(
    hydra_init: None, overrides: list[str], refused: bool
) -> None:
    cfg = compose("config", overrides=["launcher=submitit_slurm", *overrides], return_hydra_config=True)
    if refused:
        with pytest.raises(ConfigError, match=r"^hydra\.launcher\.signal_delay_s=\d+: "):
            check_launcher(cfg)
    else:
        check_launcher(cfg)


@pytest.mark.parametrize("launcher", ["basic", "joblib", "submitit_local"])
def test_launchers_without_a_requeue_signal_are_not_checked(hydra_init: None, launcher: str) -> None:
    check_launcher(compose("config", overrides=[f"launcher={launcher}"], return_hydra_config=True))
