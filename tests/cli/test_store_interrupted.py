"""Issue 9 case 9: a first run killed while the sqlite MLflow store is being created.

The kills are real SIGKILLs of a process creating the store. They land at chosen SQL statements of
MLflow's schema build (a SQLAlchemy event hook in the child counts them), so each kill hits the same
point on every machine: the first statement, the first half-done table rebuild of a migration, and
a point deep in the migration chain.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from giant.errors import ConfigError
from tests.helpers.cli import ROOT, SCRIPT, TIMEOUT, Env

# Runs in a child: kill this process (SIGKILL, nothing cleans up) right after the chosen statement.
# `stop` is a statement number, or "batch" for the first table rebuild of a migration (the table
# copy `_alembic_tmp_<name>` exists, the original is not yet replaced).
CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    uri, stop, opener = sys.argv[1], sys.argv[2], sys.argv[3]
    seen = 0

    @event.listens_for(Engine, "after_cursor_execute")
    def kill(conn, cursor, statement, *args):
        global seen
        seen += 1
        batch = statement.lstrip().startswith("CREATE TABLE _alembic_tmp_")
        if (stop == "batch" and batch) or (stop != "batch" and seen == int(stop)):
            os.kill(os.getpid(), signal.SIGKILL)

    if opener == "giant":
        from giant.config import TrackingSettings, shipped
        from giant.tracking.mlflow_logger import open_experiment

        open_experiment(shipped(TrackingSettings, uri=uri))
    else:  # MLflow's own in-place creation, as `mlflow ui` or an older giant does it
        from mlflow.tracking import MlflowClient

        MlflowClient(tracking_uri=uri).search_experiments()
    """
)


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "GIANT_", "HYDRA_"))}
    env.update(
        PYTHONPATH=str(ROOT),
        GIANT_CACHE_DIR=str(tmp / "cache"),
        GIANT_OUTPUT_DIR=str(tmp / "outputs"),
        GIANT_MULTIRUN_DIR=str(tmp / "multirun"),
    )
    return env


def _killed_creation(db: Path, stop: str, opener: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, f"sqlite:///{db}", stop, opener],
        env=_env(db.parent),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]


def _revision(db: Path) -> str | None:
    with sqlite3.connect(db) as conn:
        try:
            return conn.execute("SELECT version_num FROM alembic_version").fetchone()[0]
        except sqlite3.Error:
            return None


@pytest.fixture(scope="module")
def complete_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store MLflow built completely, in place."""
    from mlflow.tracking import MlflowClient

    db = tmp_path_factory.mktemp("complete") / "mlflow.db"
    MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments()
    return db


@pytest.fixture(scope="module")
def head_revision(complete_store: Path) -> str:
    revision = _revision(complete_store)
    assert revision
    return revision


@pytest.mark.slow
def test_a_kill_during_creation_never_leaves_a_store_that_later_runs_choke_on(
    tmp_path: Path, head_revision: str
) -> None:
    """Killed three times at different points, then run to the end: after each kill the store is
    absent or complete, and the run that finally finishes opens it and leaves no debris."""
    from mlflow.tracking import MlflowClient

    db = tmp_path / "store" / "mlflow.db"
    for stop in ("1", "batch", "1500"):
        _killed_creation(db, stop, "giant")
        if db.exists():
            assert _revision(db) == head_revision, f"killed at statement {stop}: half-built {db}"

    proc = subprocess.run(
        [sys.executable, "-c", CHILD, f"sqlite:///{db}", "0", "giant"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _revision(db) == head_revision
    assert MlflowClient(tracking_uri=f"sqlite:///{db}").get_experiment_by_name("giant") is not None
    assert sorted(path.name for path in db.parent.iterdir()) == ["mlflow.db", "mlflow.db.lock"]


@pytest.fixture(scope="module")
def half_built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store MLflow's in-place creation leaves when killed inside a migration's table rebuild;
    MLflow itself cannot open it any more (checked here, so the test below tests something)."""
    from mlflow.tracking import MlflowClient

    db = tmp_path_factory.mktemp("half_built") / "store" / "mlflow.db"
    _killed_creation(db, "batch", "mlflow")
    with pytest.raises(OperationalError):  # e.g. "duplicate column name" when the migration reruns
        MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments()
    return db


@pytest.mark.slow
def test_parallel_first_runs_build_the_store_once(tmp_path: Path, head_revision: str) -> None:
    """Three jobs starting together on a new store (joblib workers, SLURM tasks) all open it."""
    db = tmp_path / "store" / "mlflow.db"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, f"sqlite:///{db}", "0", "giant"],
            env=_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 0, err[-2000:]
    assert _revision(db) == head_revision
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM experiments WHERE name = 'giant'").fetchone()[0] == 1


def _cli(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args, "provider=random", "limit=1"],
        cwd=tmp,
        env=_env(tmp),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def _assert_one_line(proc: subprocess.CompletedProcess[str], db: Path) -> None:
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("run_eval: tracking.uri: ")
    assert f"mv {db} {db}.broken" in lines[0]


@pytest.mark.slow
def test_a_half_built_store_is_one_config_error_line(tmp_path: Path, half_built: Path) -> None:
    """The job in-process: the ConfigError the command line prints as its one line with exit 2 (the
    process's line and code: the sweep's test below)."""
    job = Env(tmp_path, _env(tmp_path))
    with pytest.raises(ConfigError) as err:
        job.job(tmp_path / "job", f"tracking.uri=sqlite:///{half_built}", "provider=random", "limit=1")
    (line,) = str(err.value).splitlines()
    assert line.startswith("tracking.uri: ") and f"mv {half_built} {half_built}.broken" in line


@pytest.mark.slow
@pytest.mark.subprocess_job
def test_a_sweep_on_a_truncated_store_is_one_line_and_exit_2(tmp_path: Path, complete_store: Path) -> None:
    """A store cut short (a copy or a disk-full write that stopped) fails the sweep before any job."""
    db = tmp_path / "mlflow.db"
    db.write_bytes(complete_store.read_bytes()[:65536])
    proc = _cli(tmp_path, "-m", "agent=giant,thumbnail", f"tracking.uri=sqlite:///{db}")
    _assert_one_line(proc, db)
    assert not (tmp_path / "multirun").exists() or not any((tmp_path / "multirun").rglob("results.jsonl"))


@pytest.mark.parametrize(
    ("damage", "found"),
    [
        ("DROP TABLE alembic_version", "found version None"),
        ("UPDATE alembic_version SET version_num='0'", "0"),
    ],
)
def test_a_store_without_a_known_revision_names_the_file_and_both_fixes(
    tmp_path: Path, complete_store: Path, damage: str, found: str
) -> None:
    """No revision, or one this MLflow does not know: moving it aside and `mlflow db upgrade` are named."""
    from giant.config import TrackingSettings, shipped
    from giant.tracking.mlflow_logger import open_experiment

    db = tmp_path / "mlflow.db"
    db.write_bytes(complete_store.read_bytes())
    with sqlite3.connect(db) as conn:
        conn.execute(damage)
    uri = f"sqlite:///{db}"
    with pytest.raises(ConfigError) as caught:
        open_experiment(shipped(TrackingSettings, uri=uri))
    message = str(caught.value)
    assert "\n" not in message and found in message
    assert f"mv {db} {db}.broken" in message and f"mlflow db upgrade {uri}" in message


def test_a_folder_where_the_store_should_be_is_one_line(tmp_path: Path) -> None:
    """MLflow would retry for minutes before failing with a traceback."""
    from giant.config import TrackingSettings, shipped
    from giant.tracking.mlflow_logger import open_experiment

    (tmp_path / "mlflow.db").mkdir()
    with pytest.raises(ConfigError, match=r"mlflow.db is not a file"):
        open_experiment(shipped(TrackingSettings, uri=f"sqlite:///{tmp_path / 'mlflow.db'}"))
