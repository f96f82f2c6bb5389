"""The session's demo store: one real sweep of the demo tasks (the offline random provider, two tasks x
two step limits, four items each) run once through the command line into a sqlite MLflow store in a tmp
folder, its jobs traced and one job's traces queued for review. The sweep-view, compare, review, tables
and browser tests read it instead of each running a sweep of its own; the sweep runs as a subprocess
because what it prints at its end (the table, the plot, the compare.py commands) is tested.

Read-only: `fingerprint()` is taken once the store is built and again at the end of the session (the
`demo_store` fixture fails the session's last test if it moved). A test that logs runs, renames
folders or otherwise writes works on `copy(folder)`, a copy with every path inside the store moved to
the copy's folder. The MLflow UI that serves the store (tests/helpers/ui.py) may hold experiments of
the tests' own beside the demo's: the demo experiment and the store's folder are what stay as built.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # MLflow and giant are imported when a store is used: tests/conftest.py imports this
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient

    from giant.tracking.review import Review

ROOT = Path(__file__).resolve().parents[2]
RUN_EVAL = ROOT / "scripts" / "run_eval.py"
TASKS = ("demo_shapes", "demo_count")
STEPS = ("1", "3")
ITEMS = 4  # per job: `limit`
EXPERIMENT = "giant"
TIMEOUT_S = 600
# What a user's shell may hold that would send the sweep elsewhere than the tmp store
FOREIGN = ("MLFLOW_", "GIANT_", "HYDRA_", "OPENAI_", "ANTHROPIC_")


@dataclass(frozen=True)
class DemoStore:
    root: Path
    uri: str
    env: dict[str, str]  # the environment the sweep ran in: run scripts against the store in it
    sweep_dir: Path
    sweep_id: str  # the sweep's parent run
    experiment_id: str
    stdout: str  # what the sweep printed
    review: Review  # the queue of the traces of jobs(TASKS[0])[-1]

    @property
    def db(self) -> Path:
        return self.root / "store" / "mlflow.db"

    def client(self) -> MlflowClient:
        from mlflow.tracking import MlflowClient

        return MlflowClient(self.uri)

    def jobs(self, task: str = TASKS[0]) -> list[Run]:
        """The sweep's job runs of `task`, by step limit (STEPS' order)."""
        from giant.tracking.view import jobs_filter

        runs = self.client().search_runs(
            [self.experiment_id],
            f"{jobs_filter(self.sweep_id)} and tags.dataset = '{task}'",
        )
        return sorted(runs, key=lambda run: int(run.data.params["agent.max_steps"]))

    def folders(self, task: str = TASKS[0]) -> list[Path]:
        """The job folders of jobs(task)."""
        return [Path(run.data.tags["output_dir"]) for run in self.jobs(task)]

    def run(
        self, script: Path, *args: str, check: bool = True, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """A project script as a subprocess in the sweep's environment (from `cwd`, default the root:
        a script that writes beside itself writes into a copy, or the fingerprint says so)."""
        proc = subprocess.run(
            [sys.executable, str(script), *args],
            cwd=cwd or self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        return proc

    def copy(self, dest: Path) -> DemoStore:
        """The whole store copied to `dest` (a folder that does not exist yet), every path the store
        holds (artifact locations, the jobs' output_dir tags, params) moved there: a test writes here."""
        shutil.copytree(self.root, dest, symlinks=True)
        old, new = f"{self.root}/", f"{dest}/"
        with sqlite3.connect(dest / self.db.relative_to(self.root)) as db:
            tables = [name for (name,) in db.execute("select name from sqlite_master where type = 'table'")]
            for table in tables:
                for column in db.execute(f"pragma table_info('{table}')").fetchall():
                    if column[2].upper().startswith(("TEXT", "VARCHAR")):
                        db.execute(
                            f'update "{table}" set "{column[1]}" = replace("{column[1]}", ?, ?)', (old, new)
                        )
        env = {key: value.replace(old, new) for key, value in self.env.items()}
        sweep_dir = Path(str(self.sweep_dir).replace(old, new))
        return replace(self, root=dest, uri=self.uri.replace(old, new), env=env, sweep_dir=sweep_dir)

    def fingerprint(self) -> list[str]:
        """What must not move: every file under the root (but the database, which the UI's own
        experiments may grow) by size and time, and the demo experiment's runs, whole."""
        files = [
            f"{path.relative_to(self.root)} {path.stat().st_size} {path.stat().st_mtime_ns}"
            for path in sorted(self.root.rglob("*"))
            if path.is_file() and path.parent != self.db.parent
        ]
        runs = [
            json.dumps(
                [
                    run.info.run_id,
                    run.info.status,
                    run.info.end_time,
                    run.data.tags,
                    run.data.params,
                    run.data.metrics,
                ],
                sort_keys=True,
            )
            for run in self.client().search_runs(
                [self.experiment_id], max_results=5000, order_by=["attributes.run_id"]
            )
        ]
        return files + runs


def build(root: Path, empty_db: Path) -> DemoStore:
    """The sweep run into `root` (a new folder): store/mlflow.db (a copy of `empty_db`, migrated),
    store/artifacts, sweep/, cache/."""
    import mlflow

    from giant.tracking.review import open_review
    from tests.helpers.subprocess_guard import shared

    (root / "store").mkdir(parents=True)
    shutil.copyfile(empty_db, root / "store" / "mlflow.db")
    env = {key: value for key, value in os.environ.items() if not key.startswith(FOREIGN)}
    env.update(GIANT_CACHE_DIR=str(root / "cache"), GIANT_OUTPUT_DIR=str(root / "outputs"))
    uri, sweep_dir = f"sqlite:///{root / 'store' / 'mlflow.db'}", root / "sweep"
    with shared("the demo store's sweep"):
        proc = _sweep(root, env, uri, sweep_dir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sweep_id = json.loads((sweep_dir / "mlflow_sweep.json").read_text())["parent_run_id"]
    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    assert experiment is not None
    store = DemoStore(root, uri, env, sweep_dir, sweep_id, experiment.experiment_id, proc.stdout, None)  # type: ignore[arg-type]
    try:
        review = open_review(client, store.jobs()[-1].info.run_id)  # sets MLflow's global tracking URI
    finally:
        mlflow.set_tracking_uri(None)
    return replace(store, review=review)


def _sweep(root: Path, env: dict[str, str], uri: str, sweep_dir: Path) -> subprocess.CompletedProcess[str]:
    """The demo sweep through the command line (scripts/run_eval.py -m), its output captured."""
    return subprocess.run(
        [
            sys.executable,
            str(RUN_EVAL),
            "-m",
            "provider=random",
            "dataset=demo",
            f"dataset.benchmark={','.join(TASKS)}",
            f"agent.max_steps={','.join(STEPS)}",
            f"limit={ITEMS}",
            "bootstrap_replicates=100",
            f"tracking.uri={uri}",
            f"hydra.sweep.dir={sweep_dir}",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


@pytest.fixture(scope="session")
def empty_store_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated, empty store built once: creating MLflow's schema costs seconds, copying a file none."""
    from mlflow.tracking import MlflowClient

    db = tmp_path_factory.mktemp("mlflow_template") / "mlflow.db"
    MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments()
    return db


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory: pytest.TempPathFactory, empty_store_db: Path) -> Iterator[DemoStore]:
    """The session's demo store (tests/conftest.py groups its users on one pytest-xdist worker)."""
    store = build(tmp_path_factory.mktemp("demo_store") / "demo", empty_store_db)
    built = store.fingerprint()
    yield store
    moved = set(store.fingerprint()) ^ set(built)
    assert not moved, (
        f"a test wrote into the read-only demo store (write into DemoStore.copy): {sorted(moved)[:5]}"
    )
