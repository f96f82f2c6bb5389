"""A real MLflow tracking server on 127.0.0.1 (sqlite store, served artifacts), as a cluster's jobs
would share one: every job logs over HTTP, none opens the database file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.slurm.cluster import free_port

START_TIMEOUT_S = 120  # a cold import of MLflow's server on a busy 2-core machine


class MlflowServer:
    def __init__(self, root: Path, port: int | None = None) -> None:
        """`port`: that of an earlier server on the same `root`, to bring it back after an outage."""
        self.root = root
        self.port = free_port() if port is None else port
        self.log = root / "mlflow_server.log"
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "mlflow",
                    "server",
                    "--backend-store-uri",
                    f"sqlite:///{root / 'mlflow.db'}",
                    "--artifacts-destination",
                    str(root / "artifacts"),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--workers",
                    "1",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                # no job runner beside the server (a second interpreter importing MLflow): no test
                # submits MLflow jobs, and two busy cores start the server alone sooner
                env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
                start_new_session=True,  # its workers share its process group: stop() ends them all
            )

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self) -> None:
        """Returns once /health answers; raises with the server's log if it died or never answered."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mlflow server exited ({self.proc.returncode}):\n{self._tail()}")
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.3)
        raise RuntimeError(f"mlflow server: no /health answer after {START_TIMEOUT_S} s:\n{self._tail()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def _tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])
