"""MLflow's UI for the tests, started as `make ui` starts it (python -m giant.tracking.ui: the store
checked, `mlflow ui` in a process group of its own, the addresses printed once it answers) and stopped
as a whole: the UI's group is killed, then the command's group gets SIGTERM, so nothing serves after
the tests (`pgrep -af mlflow` finds nothing). That the command itself stops its UI on SIGTERM is
tests/tracking/test_ui_signals.py's to check.

One UI per session (the `demo_ui` fixture in tests/conftest.py) serves the session's demo store; tests
that check the command's own behaviour (its signals) start their own.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers.store import DemoStore

STARTUP_S = 180  # the UI imports and starts in 20-30 s on a busy 2-core machine
RENDER_MS = 120_000  # its first page renders in tens of seconds there


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def answers(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/health", timeout=5):
            return True
    except OSError:
        return False


@dataclass
class Ui:
    """A running `make ui`: its address and every line it printed (read as they come, on a thread:
    the UI's own log goes to the same pipe, which must never fill)."""

    base: str
    process: subprocess.Popen[str]
    printed: list[str] = field(default_factory=list)
    answered_when_printed: bool | None = None  # at its first address line: did the UI answer?
    server_group: int | None = None  # the `mlflow ui` process group the command started

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if "MLflow UI at" in line and self.answered_when_printed is None:
                self.answered_when_printed = answers(self.base)
            self.printed.append(line.rstrip("\n"))

    def wait_for(self, text: str, timeout_s: float = STARTUP_S) -> str:
        """The first printed line holding `text`, once printed."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = [line for line in self.printed if text in line]
            if found:
                return found[0]
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError(f"make ui never printed {text!r}:\n" + "\n".join(self.printed[-40:]))

    def address(self, start: str) -> str:
        """The address on the line `make ui: <start>...: <address>`."""
        return self.wait_for(f"make ui: {start}").rsplit(": ", 1)[1]


@contextlib.contextmanager
def make_ui(uri: str, artifacts: Path, cwd: Path, wait_for: str = "MLflow UI at") -> Iterator[Ui]:
    """`make ui`'s command over `uri`, started from `cwd` (where the server keeps uploaded artifacts,
    ./mlartifacts), once it printed a line holding `wait_for`."""
    from giant.tracking.ui import stop_group

    port = str(free_port())
    command = [sys.executable, "-m", "giant.tracking.ui", uri, str(artifacts), "127.0.0.1", port]
    process = subprocess.Popen(
        command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    ui = Ui(f"http://127.0.0.1:{port}", process)
    threading.Thread(target=ui._read, daemon=True).start()
    try:
        ui.wait_for("MLflow UI at")
        ui.server_group = _server_group(process.pid)
        ui.wait_for(wait_for)
        yield ui
    finally:
        # The tests are done with the UI: its group is killed at once (a graceful stop of MLflow's
        # workers takes up to STOP_S), then the command, which finds its server gone, is stopped.
        if ui.server_group is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(ui.server_group, signal.SIGKILL)
        stop_group(process)


def _server_group(pid: int) -> int | None:
    """The process group of the `mlflow ui` the command started (its child), where /proc tells."""
    with contextlib.suppress(OSError, ValueError):
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return os.getpgid(int(children[0])) if children else None
    return None


@pytest.fixture(scope="session")
def demo_ui(demo_store: DemoStore, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ui]:
    """`make ui` over the session's demo store, once it printed the demo sweep's chart address (its
    last line). Tests that need the UI to show what they write make an experiment of their own."""
    cwd = tmp_path_factory.mktemp("demo_ui")
    with make_ui(demo_store.uri, cwd / "artifacts", cwd, wait_for="the same sweep's charts") as ui:
        yield ui
