"""A real two-job sweep (random provider, demo_shapes, T=1 and T=5) run once for the module through
the real CLI into a tmp MLflow store: the jobs every comparison test reads."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from giant.tracking.names import JOB_ROLE, ROLE_TAG, tag_filter
from tests.helpers.cli import ROOT, Env

COMPARE = ROOT / "scripts" / "compare.py"


@dataclass
class Sweep:
    cli: Env
    folder: Path
    sweep_id: str
    jobs: list[Path]  # T=1 then T=5
    run_ids: list[str]


@pytest.fixture(scope="session")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Sweep:
    tmp = tmp_path_factory.mktemp("compare")
    drop = ("MLFLOW_", "GIANT_", "HYDRA_", "OPENAI_", "ANTHROPIC_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(GIANT_CACHE_DIR=str(tmp / "cache"), GIANT_OUTPUT_DIR=str(tmp / "outputs"))
    cli = Env(tmp, env)
    folder = tmp / "sweep"
    cli.run(
        "-m",
        "provider=random",
        "dataset.benchmark=demo_shapes",
        "agent.max_steps=1,5",
        "bootstrap_replicates=100",
        f"tracking.uri={cli.uri}",
        f"hydra.sweep.dir={folder}",
    )
    sweep_id = json.loads((folder / "mlflow_sweep.json").read_text())["parent_run_id"]
    client = cli.client()
    experiment = client.get_experiment_by_name("giant")
    assert experiment is not None
    runs = client.search_runs(
        [experiment.experiment_id],
        f"tags.sweep_id = '{sweep_id}' and {tag_filter(ROLE_TAG, JOB_ROLE)}",
        order_by=["tags.T ASC"],
    )
    jobs = [Path(run.data.tags["output_dir"]) for run in runs]
    return Sweep(cli, folder, sweep_id, jobs, [run.info.run_id for run in runs])


def run_compare(sweep: Sweep, out: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return sweep.cli.run(
        *args, "--out", str(out), "--tracking-uri", sweep.cli.uri, script=COMPARE, check=check
    )


@dataclass
class Compared:
    out: Path
    proc: subprocess.CompletedProcess[str]


@pytest.fixture(scope="session")
def compared(sweep: Sweep, tmp_path_factory: pytest.TempPathFactory) -> Compared:
    """The sweep's two job folders compared once (logged to MLflow), for the CLI and browser tests."""
    out = tmp_path_factory.mktemp("compared") / "cmp"
    return Compared(out, run_compare(sweep, out, *map(str, sweep.jobs)))
