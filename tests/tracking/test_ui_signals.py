"""`make ui` (giant.tracking.ui) stops MLflow's server and its workers on SIGTERM as on Ctrl-C: nothing
is left alive in the server's process group, so nothing serves the port (issue 42)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.ui import STARTUP_S, free_port


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _server_group(ui_pid: int) -> int:
    """The process group of the `mlflow ui` process `make ui` started (its child)."""
    children = Path(f"/proc/{ui_pid}/task/{ui_pid}/children").read_text().split()
    assert children, "make ui started no server"
    return os.getpgid(int(children[0]))


@pytest.mark.slow
def test_sigterm_to_make_ui_leaves_nothing_serving(tmp_path: Path, empty_store_db: Path) -> None:
    """(Ctrl-C takes the same way out: KeyboardInterrupt, then the server's group stopped.)"""
    shutil.copy(empty_store_db, tmp_path / "mlflow.db")
    port = str(free_port())
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    command = [sys.executable, "-m", "giant.tracking.ui", uri, str(tmp_path / "artifacts"), "127.0.0.1", port]
    ui = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert ui.stdout is not None
        deadline = time.monotonic() + STARTUP_S
        for line in ui.stdout:
            if "MLflow UI at" in line or time.monotonic() > deadline:
                break
        group = _server_group(ui.pid)
        assert _group_alive(group)
        ui.send_signal(signal.SIGTERM)
        assert ui.wait(timeout=60) == 0
        assert not _group_alive(group)  # mlflow ui and every worker it started are gone
    finally:
        if ui.poll() is None:
            ui.kill()
