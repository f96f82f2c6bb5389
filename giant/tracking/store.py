"""The local sqlite MLflow store: built whole or not at all, and a broken one named in one line.

MLflow builds a new sqlite store in place, running its schema migrations for a few seconds; a Ctrl-C
or kill in that window leaves a half-built file that every later run trips over with a SQLAlchemy
traceback. Here the schema is built in a temporary file in the same folder and moved into place by
one atomic rename, under a file lock so that parallel jobs (joblib workers, SLURM tasks sharing the
folder) build it once. A store broken some other way (an older giant, `mlflow ui` killed while it
created the file, a truncated copy) is reported as a `ConfigError` that names the file and the fix.
"""

from __future__ import annotations

import glob
import logging
import os
import secrets
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock, Timeout

from giant.errors import ConfigError
from giant.tracking.view import CHART_MODE, RUNS_TABLE_QUERY, latest_sweep_view, view_address

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

SQLITE_PREFIX = "sqlite:///"
BUILDING = ".building"  # suffix of a store being built; one left behind belongs to a killed builder
# Building the schema takes seconds; a job still waiting after this long is behind a hung process,
# and an error that names the lock beats a run that waits forever.
LOCK_TIMEOUT_S = 120.0


def sqlite_path(uri: str) -> Path | None:
    """The database file of a `sqlite:///` tracking URI (None for servers and other stores)."""
    return Path(uri[len(SQLITE_PREFIX) :]) if uri.startswith(SQLITE_PREFIX) else None


def ensure_sqlite_store(path: Path, artifact_root: str | None) -> None:
    """Create the store at `path` if it does not exist, so that it appears complete or not at all.

    `artifact_root` is where the store's "Default" experiment keeps artifacts (MLflow would use
    ./mlruns under whatever folder the first run started in)."""
    if path.exists():
        if not path.is_file():
            raise ConfigError(f"tracking.uri: {path} is not a file; set tracking.uri=sqlite:///<file>.db")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path):
        if path.exists():  # built by a parallel job while this one waited for the lock
            return
        for stale in path.parent.glob(f".{glob.escape(path.name)}.*{BUILDING}*"):
            stale.unlink(missing_ok=True)  # the lock is ours: no live builder owns these
        building = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}{BUILDING}")
        try:
            _build_schema(building, artifact_root or path.parent.joinpath("artifacts").as_uri())
            _fsync(building)
            os.replace(building, path)
            _fsync(path.parent)
        finally:
            building.unlink(missing_ok=True)


@contextmanager
def opening_store(uri: str) -> Iterator[None]:
    """Around MLflow's first use of a store: on a sqlite file, what MLflow raises becomes one line,
    and its "creating tables" notes (on an existing file, a repair attempt) stay out of the output."""
    path = sqlite_path(uri)
    if path is None:
        yield
        return
    from alembic.util import CommandError
    from mlflow.exceptions import MlflowException
    from sqlalchemy.exc import SQLAlchemyError

    notes = logging.getLogger("mlflow.store.db.utils")
    level = notes.level
    notes.setLevel(logging.WARNING)
    try:
        yield
    except (SQLAlchemyError, MlflowException, CommandError) as exc:
        raise broken_store(uri, path, exc) from None
    finally:
        notes.setLevel(level)


def broken_store(uri: str, path: Path, exc: BaseException) -> ConfigError:
    """The one-line report for a store MLflow cannot open (`exc` is what MLflow raised)."""
    cause = (str(exc).splitlines() or [type(exc).__name__])[0]
    aside = (
        f"move it aside (mv {path} {path}.broken) and rerun, or point tracking.uri (MLFLOW_TRACKING_URI) "
        "at another file"
    )
    if "out-of-date database schema" in cause:  # MLflow's wording when the schema revision differs
        found = cause.split("(", 1)[-1].split(")", 1)[0]
        return ConfigError(
            f"tracking.uri: {uri} has an incomplete or older MLflow schema ({found}); if a first run "
            f"was interrupted, {aside}; if an older MLflow made it, back it up and run "
            f"`mlflow db upgrade {uri}`"
        )
    return ConfigError(
        f"tracking.uri: {uri} is not a complete MLflow store ({cause[:160]}; an interrupted first run?); "
        f"{aside}"
    )


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `<db>.lock` beside the store; the lock file itself is left in place
    (removing it would let a waiting process and a newcomer hold two different locks)."""
    lock = FileLock(path.with_name(f"{path.name}.lock"), timeout=LOCK_TIMEOUT_S)
    try:
        lock.acquire()
    except Timeout:
        raise ConfigError(
            f"tracking.uri: {lock.lock_file} stayed locked for {LOCK_TIMEOUT_S:g} s while building "
            f"{path}; another process holds it (`fuser {lock.lock_file}` names it): stop that process, "
            "or wait and rerun"
        ) from None
    try:
        yield
    finally:
        lock.release()


def _build_schema(path: Path, artifact_root: str) -> None:
    """MLflow's own store constructor creates every table and runs every migration."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    store = SqlAlchemyStore(f"{SQLITE_PREFIX}{path}", artifact_root)
    store.engine.dispose()  # close the file before it is renamed


def _fsync(path: Path) -> None:
    """Flush a file (or a folder's entry list) so the rename cannot outlive the data on power loss."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m giant.tracking.store URI [UI_ADDRESS]` (run by `make ui`): `mlflow ui` would build a
    missing store in place, interruptible like any first run, and meet a broken one with a traceback.
    With the UI's address it also prints where each experiment's runs table is (runs_table_links)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) not in (1, 2):
        print("usage: python -m giant.tracking.store TRACKING_URI [UI_ADDRESS]", file=sys.stderr)
        return 2
    uri, path = args[0], sqlite_path(args[0])
    if path is None:  # a server or another store: nothing to build here
        return 0
    try:
        ensure_sqlite_store(path, None)
        with opening_store(uri):
            from mlflow.tracking import MlflowClient

            client = MlflowClient(tracking_uri=uri)
            client.search_experiments(max_results=1)
    except ConfigError as err:
        print(f"make ui: {err}", file=sys.stderr)
        return 2
    if len(args) == 2:
        for line in runs_table_links(client, args[1]):
            print(f"make ui: {line}")
    return 0


def runs_table_links(client: MlflowClient, address: str) -> list[str]:
    """Per experiment with runs: the address of its runs table, then that of its newest sweep's view
    (giant.tracking.view: the sweep's jobs with the ablation's columns, and its charts). MLflow 3.17's
    UI opens an experiment as its "GenAI | Model training" switch stands (GenAI, the overview of
    traces, until the user flips it), whatever the experiment's kind tag says;
    `workflowType=machine_learning` in the address opens the runs table."""
    lines = []
    for experiment in client.search_experiments():
        if client.search_runs([experiment.experiment_id], max_results=1):
            page = f"#/experiments/{experiment.experiment_id}/runs?{RUNS_TABLE_QUERY}"
            lines.append(f"runs of experiment {experiment.name}: {address.rstrip('/')}/{page}")
            sweep = latest_sweep_view(client, experiment.experiment_id)
            if sweep is not None:
                table = view_address(address, experiment.experiment_id, sweep)
                charts = view_address(address, experiment.experiment_id, sweep, CHART_MODE)
                lines.append(f"newest sweep of {experiment.name}, its jobs side by side: {table}")
                lines.append(f"the same sweep's charts (metric vs each swept setting): {charts}")
    return lines


if __name__ == "__main__":
    sys.exit(main())
