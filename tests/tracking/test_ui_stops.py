"""`make ui`'s command (giant.tracking.ui) stops what it started: on SIGTERM (a test fixture's, a
terminal closing) the UI server and the workers it spawned end with it, not only the server. The UI is
a stand-in here (a small HTTP server answering /health that starts a worker of its own, as `mlflow ui`
starts its job workers): what is tested is the stop, not MLflow's UI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.helpers.ui import free_port

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 120.0  # a generous bound for a loaded machine: the test waits for processes, it times nothing

FAKE_UI = textwrap.dedent(
    """
    import http.server, subprocess, sys

    host, port, pids = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(pids, "w") as f:
        f.write(f"{worker.pid}\\n")

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    http.server.HTTPServer((host, port), Health).serve_forever()
    """
)

RUN_UI = textwrap.dedent(
    """
    import sys
    from giant.tracking import ui

    fake, pids = sys.argv[1], sys.argv[2]
    ui.server_command = lambda uri, root, host, port: [sys.executable, fake, host, port, pids]
    sys.exit(ui.main(sys.argv[3:]))
    """
)


def _alive(pid: int) -> bool:
    """A process that runs: not gone, and not a zombie nobody has reaped yet."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
def test_sigterm_stops_the_ui_and_its_workers(tmp_path: Path) -> None:
    fake = tmp_path / "fake_ui.py"
    fake.write_text(FAKE_UI)
    pids = tmp_path / "pids"
    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    args = [uri, str(tmp_path / "artifacts"), "127.0.0.1", str(free_port())]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", RUN_UI, str(fake), str(pids), *args]
    ui = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    worker = None
    try:
        assert ui.stdout is not None
        printed = []
        for line in ui.stdout:
            printed.append(line)
            if "MLflow UI at" in line:
                break
        assert any("MLflow UI at" in line for line in printed), "".join(printed)
        worker = int(pids.read_text())
        assert _alive(worker)

        ui.send_signal(signal.SIGTERM)
        rest = ui.communicate(timeout=WAIT_S)[0]
        assert ui.returncode == 0, "".join(printed) + rest
        deadline = time.monotonic() + WAIT_S
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(worker), "the UI's worker outlived `make ui`"
    finally:
        if ui.poll() is None:
            ui.kill()
            ui.wait()
        if worker is not None and _alive(worker):
            os.kill(worker, signal.SIGKILL)
