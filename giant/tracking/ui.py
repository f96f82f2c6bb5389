"""`make ui`: the MLflow UI over giant's store, its addresses printed once the server answers them.

`mlflow ui` takes 20-30 s to start its workers on a small machine; an address printed before that is a
refused connection in the browser. Here the store is checked (giant.tracking.store), the UI started
as a child process, `/health` polled, and only then the addresses printed: each experiment's runs
table and its newest sweep's view (giant.tracking.view). Starlette's deprecation warning, which every
worker prints at start-up, is silenced through PYTHONWARNINGS (inherited by the workers; a filter on
its message, since its category is a UserWarning). The UI runs in a process group of its own, and
Ctrl-C, SIGTERM or any other end of this command stops that whole group: `mlflow ui` starts a server
and its job workers, which would otherwise outlive it.

python -m giant.tracking.ui TRACKING_URI ARTIFACT_ROOT HOST PORT
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from types import FrameType
from typing import Any

import httpx2

from giant.tracking.store import main as check_store
from giant.tracking.store import runs_table_links

STARTUP_S = 300.0  # give up on a UI that has not answered after this long
POLL_S = 0.5
QUIET = "ignore:starlette.middleware.wsgi is deprecated"  # Starlette's warning, printed by every worker
STOP_S = 30.0  # the UI's processes get this long to end after SIGTERM, then are killed


def answers(base: str, timeout_s: float = 2.0) -> bool:
    try:
        httpx2.get(f"{base}/health", timeout=timeout_s)
    except httpx2.HTTPError:
        return False
    return True


def server_command(uri: str, artifact_root: str, host: str, port: str) -> list[str]:
    command = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri]
    command += ["--default-artifact-root", artifact_root, "--host", host, "--port", port]
    return [*command, "--workers", "1"]  # one researcher's UI: four workers start four times slower


def stop_group(server: subprocess.Popen[Any]) -> None:
    """The UI and every process it started (its process group): SIGTERM, then SIGKILL to what is left
    after STOP_S. A worker still ending after its server has gone is waited for too."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_S
    while time.monotonic() < deadline:
        server.poll()  # reaps the server, so that only live processes stay in the group
        try:
            os.killpg(server.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(POLL_S)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGKILL)
    server.wait()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 4:
        print("usage: python -m giant.tracking.ui TRACKING_URI ARTIFACT_ROOT HOST PORT", file=sys.stderr)
        return 2
    uri, artifact_root, host, port = args
    code = check_store([uri])
    if code != 0:
        return code
    base = f"http://{host}:{port}"
    if answers(base):
        print(f"make ui: something already answers at {base}; stop it or set MLFLOW_PORT", file=sys.stderr)
        return 2
    env = {**os.environ, "PYTHONWARNINGS": QUIET}
    print(f"make ui: starting MLflow's UI on {base} (it takes up to half a minute) ...", flush=True)
    server = subprocess.Popen(server_command(uri, artifact_root, host, port), env=env, start_new_session=True)
    stopped: list[int] = []

    def terminated(signum: int, frame: FrameType | None) -> None:
        """SIGTERM: the UI's group is asked to stop, and this command ends when its server has."""
        stopped.append(signum)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, terminated)
    try:
        deadline = time.monotonic() + STARTUP_S
        while not answers(base):
            if stopped:
                return 0
            if server.poll() is not None:
                print(f"make ui: mlflow ui exited with code {server.returncode}", file=sys.stderr)
                return server.returncode or 1
            if time.monotonic() > deadline:
                print(f"make ui: {base} did not answer within {STARTUP_S:g} s", file=sys.stderr)
                return 1
            time.sleep(POLL_S)
        from mlflow.tracking import MlflowClient

        print(f"make ui: MLflow UI at {base} (Ctrl-C stops it)")
        for line in runs_table_links(MlflowClient(tracking_uri=uri), base):
            print(f"make ui: {line}")
        sys.stdout.flush()
        code = server.wait()
        return 0 if stopped else code
    except KeyboardInterrupt:
        return 0
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM does not cut the stop short
        stop_group(server)


if __name__ == "__main__":
    sys.exit(main())
