"""`python -m giant.tracking.store URI`, which `make ui` runs before `mlflow ui` (issue 9 case 9)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from filelock import FileLock

from giant.tracking import store
from giant.tracking.store import main


def test_a_broken_store_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "mlflow.db"
    db.write_bytes(b"not a database " * 100)
    assert main([f"sqlite:///{db}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"mv {db} {db}.broken" in err and "Traceback" not in err


def test_a_missing_store_is_built_whole_for_the_ui(tmp_path: Path, empty_store_db: Path) -> None:
    db = tmp_path / "mlruns" / "mlflow.db"
    assert main([f"sqlite:///{db}"]) == 0
    with sqlite3.connect(db) as conn, sqlite3.connect(empty_store_db) as reference:
        query = "SELECT version_num FROM alembic_version"
        assert conn.execute(query).fetchall() == reference.execute(query).fetchall()
        default = conn.execute("SELECT artifact_location FROM experiments WHERE experiment_id = 0").fetchone()
    assert default == ((db.parent / "artifacts" / "0").as_uri(),)  # where `make ui` puts artifacts


def test_a_server_uri_is_left_to_the_server() -> None:
    assert main(["http://127.0.0.1:9"]) == 0


def test_a_held_build_lock_times_out_as_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "mlflow.db"
    lock_file = tmp_path / "mlflow.db.lock"
    monkeypatch.setattr(store, "LOCK_TIMEOUT_S", 0.2)
    with FileLock(lock_file):  # a parallel job stuck while building the store
        started = time.monotonic()
        assert main([f"sqlite:///{db}"]) == 2
        waited = time.monotonic() - started
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(lock_file) in err and "stop that process" in err
    assert 0.2 <= waited < 5 and not db.exists()
    assert main([f"sqlite:///{db}"]) == 0 and db.is_file()  # released: the rerun builds it
