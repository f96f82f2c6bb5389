"""`make ui`: the MLflow UI over giant's store, its addresses printed once the server answers them.

`mlflow ui` takes 20-30 s to start its workers on a small machine; an address printed before that is a
refused connection in the browser. Here the store is checked (giant.tracking.store), the UI started
as a child process, `/health` polled, and only then the addresses printed: each experiment's runs
table and its newest sweep's view (giant.tracking.view). Starlette's deprecation warning, which every
worker prints at start-up, is silenced through PYTHONWARNINGS (inherited by the workers; a filter on
its message, since its category is a UserWarning).

python -m giant.tracking.ui TRACKING_URI ARTIFACT_ROOT HOST PORT
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

import httpx2

from giant.tracking.store import main as check_store
from giant.tracking.store import runs_table_links

STARTUP_S = 300.0  # give up on a UI that has not answered after this long
POLL_S = 0.5
QUIET = "ignore:starlette.middleware.wsgi is deprecated"  # Starlette's warning, printed by every worker


def answers(base: str, timeout_s: float = 2.0) -> bool:
    try:
        httpx2.get(f"{base}/health", timeout=timeout_s)
    except httpx2.HTTPError:
        return False
    return True


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
    command = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri]
    command += ["--default-artifact-root", artifact_root, "--host", host, "--port", port]
    command += ["--workers", "1"]  # one researcher's UI: four workers start four times slower
    print(f"make ui: starting MLflow's UI on {base} (it takes up to half a minute) ...", flush=True)
    # Its own process group: the server and the workers it starts are stopped together, on Ctrl-C as
    # on SIGTERM (a terminated `make ui` used to leave them serving the port).
    signal.signal(signal.SIGTERM, _interrupt)
    server = subprocess.Popen(command, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + STARTUP_S
        while not answers(base):
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
        return server.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        stop(server)


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM ends `make ui` as Ctrl-C does."""
    raise KeyboardInterrupt


def stop(server: subprocess.Popen[bytes], grace_s: float = 30.0) -> None:
    """The server's whole process group (mlflow ui and its workers): SIGTERM, then SIGKILL for any
    process still there after `grace_s`."""
    if not _group_alive(server, signal.SIGTERM):
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        server.poll()  # reaps the leader, which would otherwise keep its group alive as a zombie
        if not _group_alive(server, 0):
            return
        time.sleep(0.2)
    _group_alive(server, signal.SIGKILL)
    server.wait()


def _group_alive(server: subprocess.Popen[bytes], sig: int) -> bool:
    """Sends `sig` to the server's process group (0 sends nothing): False when no process is left."""
    try:
        os.killpg(server.pid, sig)
    except ProcessLookupError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
