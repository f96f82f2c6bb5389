"""One private SLURM cluster and one MLflow server for the whole session, and the figures each SLURM
run reports (printed at the end of the pytest run, and kept in slurm_figures.jsonl in the tmp folder).

Without SLURM installed the tests skip with one line saying how to install it; under CI (`CI` set)
they fail instead, so a CI machine that lost its install step cannot pass silently.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from tests.slurm.cluster import INSTALL_HINT, Cluster, ClusterError, missing_tools, start_cluster
from tests.slurm.mlflow_server import MlflowServer

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "run_eval.py"
FIGURES: pytest.StashKey[list[str]] = pytest.StashKey()
SWEEP_TIMEOUT_S = 420
Report = Callable[..., None]


@dataclass
class SlurmStack:
    tmp: Path
    cluster: Cluster
    server: MlflowServer

    @property
    def env(self) -> dict[str, str]:
        prefixes = ("MLFLOW_", "GIANT_", "HYDRA_", "SUBMITIT_", "SLURM_")  # nothing from a calling job
        env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
        env.update(
            GIANT_CACHE_DIR=str(self.tmp / "cache"),
            GIANT_OUTPUT_DIR=str(self.tmp / "outputs"),
            GIANT_MULTIRUN_DIR=str(self.tmp / "multirun"),
            PYTHONUNBUFFERED="1",
            SLURM_CONF=str(self.cluster.conf),
        )
        return env

    def client(self) -> MlflowClient:
        return MlflowClient(self.server.uri)

    def sweep(self, name: str, *overrides: str, env: dict[str, str] | None = None) -> Path:
        """A real `run_eval.py -m launcher=submitit_slurm` sweep into the server; returns its folder.
        The launcher overrides fit jobs onto the one 2-CPU node; `env` adds to the environment, which
        sbatch hands on to every job."""
        sweep_dir = self.tmp / name
        proc = subprocess.run(
            [
                sys.executable,
                str(SCRIPT),
                "-m",
                "launcher=submitit_slurm",
                "hydra.launcher.partition=debug",
                "hydra.launcher.cpus_per_task=1",
                "hydra.launcher.mem_gb=1",
                f"tracking.uri={self.server.uri}",
                f"hydra.sweep.dir={sweep_dir}",
                *overrides,
            ],
            cwd=self.tmp,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=SWEEP_TIMEOUT_S,
        )
        (sweep_dir.parent / f"{name}.launcher.log").write_text(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            raise AssertionError(
                f"sweep {name}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}\n"
                f"{job_logs(sweep_dir)}\n{self.cluster.logs()}"
            )
        return sweep_dir


def job_logs(sweep_dir: Path, lines: int = 30) -> str:
    """The end of every SLURM job's submitit logs, for a failure message."""
    parts = []
    for path in sorted((sweep_dir / ".submitit").glob("*/*_log.*")):
        tail = path.read_text(errors="replace").splitlines()[-lines:]
        parts.append(f"--- {path.parent.name}/{path.name}\n" + "\n".join(tail))
    return "\n".join(parts)


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmStack]:
    missing = missing_tools()
    if missing:
        reason = f"SLURM is not installed (no {', '.join(missing)}): {INSTALL_HINT}"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must install it", pytrace=False)
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("slurm")
    (tmp / "cluster").mkdir()
    server = MlflowServer(tmp)  # starts in the background while the cluster comes up
    try:
        cluster = start_cluster(tmp / "cluster")
    except ClusterError as err:
        failure = f"the test SLURM cluster did not start: {err}"
    else:
        failure = ""
    if failure:
        server.stop()
        pytest.fail(failure, pytrace=False)
    try:
        from giant.data.demo import build_demo

        build_demo(tmp / "cache" / "demo")  # once here, not in every job at once
        server.wait_ready()
        yield SlurmStack(tmp=tmp, cluster=cluster, server=server)
    finally:
        cluster.stop()
        server.stop()


@pytest.fixture
def report(request: pytest.FixtureRequest, slurm: SlurmStack) -> Report:
    """report(name, jobs=..., requeues=..., ...): one line of figures, kept and printed at the end."""

    def record(name: str, **figures: object) -> None:
        line = f"{name}: " + ", ".join(f"{key} {value}" for key, value in figures.items())
        request.config.stash.setdefault(FIGURES, []).append(line)
        with (slurm.tmp / "slurm_figures.jsonl").open("a") as out:
            out.write(json.dumps({"run": name, **figures}) + "\n")
        print(line)

    return record


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    lines = config.stash.get(FIGURES, [])
    if lines:
        terminalreporter.section("SLURM run figures")
        for line in lines:
            terminalreporter.write_line(line)
