"""The command line in a subprocess, for the tests whose subject is the process (exit codes, one-line
errors, signals, launchers, a sweep, the console): the scripts, an environment that keeps the
caller's settings out and the job's cache, outputs and MLflow store in a tmp folder, and the runner.

A test that only needs a job's outcome calls `giant.evaluate` in its own process instead (Env.evaluate
does with this environment's cache and store). A test that starts a job script here is marked
`@pytest.mark.subprocess_job` (tests/helpers/subprocess_guard.py enforces it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

import giant
from giant.errors import EXIT_CONFIG, EXIT_OK, ConfigError, RunStopped
from giant.record.summary import Summary
from giant.tracking.names import OUTPUT_DIR_TAG

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "run_eval.py"
MAKE_TABLES = ROOT / "scripts" / "make_tables.py"
COMPARE = ROOT / "scripts" / "compare.py"
RESCORE = ROOT / "scripts" / "rescore.py"
ASK = ROOT / "scripts" / "ask.py"
FETCH_SLIDES = ROOT / "scripts" / "fetch_slides.py"
SECRET = "sk-test-SECRET-9f8e7d6c5b4a39281706"
TIMEOUT = 300
# The caller's settings that would change what a job does or where it writes.
FOREIGN = ("MLFLOW_", "GIANT_", "HYDRA_", "SUBMITIT_")


def clean_env(*drop: str, **extra: str) -> dict[str, str]:
    """os.environ without MLflow, giant, Hydra and submitit settings (and the prefixes in `drop`),
    with `extra` added."""
    env = {k: v for k, v in os.environ.items() if not k.startswith((*FOREIGN, *drop))}
    env.update(extra)
    return env


def cli_env(tmp: Path, *drop: str, **extra: str) -> dict[str, str]:
    """clean_env with the job's cache, outputs and sweeps under `tmp` and OPENAI_API_KEY=SECRET (`extra`
    replaces any of them)."""
    env = clean_env(
        *drop,
        OPENAI_API_KEY=SECRET,
        GIANT_CACHE_DIR=str(tmp / "cache"),  # demo slides and the resume index stay in tmp
        GIANT_OUTPUT_DIR=str(tmp / "outputs"),
        GIANT_MULTIRUN_DIR=str(tmp / "multirun"),
    )
    env.update(extra)
    return env


def run_script(
    script: Path, *args: str, cwd: Path, env: dict[str, str], timeout: float = TIMEOUT
) -> subprocess.CompletedProcess[str]:
    """`python script args` from `cwd` (not the project root: the CLI must not depend on the working
    directory), its output captured."""
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@dataclass
class Ended:
    """A job run in-process, ended as scripts/run_eval.py ends it (giant.cli.run): the exit code and the
    one line on stderr (None for a complete job) the command line gives for it, and its summary."""

    code: int
    line: str | None = None
    summary: Summary | None = None


@dataclass
class Env:
    """A tmp folder, its CLI environment and its sqlite MLflow store."""

    tmp: Path
    env: dict[str, str]

    @classmethod
    def make(cls, tmp: Path, *drop: str, **extra: str) -> Env:
        return cls(tmp, cli_env(tmp, *drop, **extra))

    @property
    def uri(self) -> str:
        return f"sqlite:///{self.tmp / 'store' / 'mlflow.db'}"

    def run(
        self, *args: str, check: bool = True, script: Path = SCRIPT, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        proc = run_script(script, *args, cwd=self.tmp, env=self.env if env is None else env)
        if check and proc.returncode != 0:
            raise AssertionError(f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        return proc

    def client(self) -> MlflowClient:
        return MlflowClient(self.uri)

    @contextmanager
    def environment(self) -> Iterator[None]:
        """This process's environment as `env` while the block runs (the key, the cache), then back."""
        with pytest.MonkeyPatch.context() as patch:
            for name in set(os.environ) - set(self.env):
                patch.delenv(name)
            for name, value in self.env.items():
                patch.setenv(name, value)
            yield

    def job(self, folder: Path, *args: str) -> Summary | None:
        """The job `run(*args)` runs, in this process (giant.evaluate: no interpreter, Hydra or MLflow
        start of its own), into `folder` with this environment; its summary. For tests that need a
        finished job or its error, not the command line around it."""
        with self.environment():
            return giant.evaluate(args, output_dir=folder)

    def rescore(self, folder: Path, *args: str) -> float:
        """The job `run(*args, script=RESCORE)` runs, in this process, into `folder` with this
        environment: conf/rescore.yaml composed with `args` and giant.rescore_job run on it, as the
        script's Hydra app does; the re-score's main metric."""
        from omegaconf import OmegaConf

        from giant.confdir import compose
        from giant.context import JobContext
        from giant.rescore_job import rescore_job

        with self.environment():
            cfg = compose("rescore", args)
            job = OmegaConf.masked_copy(cfg, [str(key) for key in cfg if key != "hydra"])
            OmegaConf.set_struct(job, True)
            return rescore_job(job, JobContext(output_dir=folder.absolute(), overrides=args))

    def ended(self, folder: Path, *args: str) -> Ended:
        """`job(folder, *args)` with the exit code and line the command line maps its end to."""
        try:
            return Ended(EXIT_OK, None, self.job(folder, *args))
        except ConfigError as err:
            return Ended(EXIT_CONFIG, f"run_eval: {err}")
        except RunStopped as err:
            return Ended(err.code, f"run_eval: {err}")

    def sweep_check(self, *args: str) -> tuple[int, list[str]]:
        """The whole-sweep check that `run_eval.py -m args` runs before anything of the sweep exists
        (giant.cli.sweep_check.SweepDataCheck, on the config Hydra composes for the sweep), in this
        process with this environment: the exit code it ends the command with (0: the sweep would
        start) and the lines it prints. The process around it: tests/cli/test_sweep_check.py."""
        import contextlib
        import io

        from hydra import initialize_config_dir
        from hydra.core.global_hydra import GlobalHydra
        from hydra.types import RunMode

        from giant.cli.sweep_check import SweepDataCheck
        from giant.confdir import CONF_DIR, prepare

        prepare()
        printed = io.StringIO()
        code = EXIT_OK
        with self.environment(), initialize_config_dir(str(CONF_DIR), version_base="1.3"):
            loader = GlobalHydra.instance().config_loader()
            overrides = [arg for arg in args if arg not in ("-m", "--multirun")]
            cfg = loader.load_configuration("config", overrides, run_mode=RunMode.MULTIRUN)
            with contextlib.redirect_stderr(printed):
                try:
                    SweepDataCheck().on_multirun_start(cfg)
                except SystemExit as stop:
                    code = int(stop.code or 0)
        return code, printed.getvalue().strip().splitlines()

    def evaluate(self, folder: Path, *args: str) -> str:
        """`job(folder, *args)` logged to `uri`: its MLflow run's id."""
        self.job(folder, *args, f"tracking.uri={self.uri}")
        client = self.client()
        experiment = client.get_experiment_by_name("giant")
        assert experiment is not None
        (run,) = client.search_runs(
            [experiment.experiment_id], f"tags.{OUTPUT_DIR_TAG} = '{folder.absolute()}'"
        )
        return str(run.info.run_id)
