"""The job's last MLflow calls, with a bounded wait for a server that stops answering. A remote
tracking server gone as a job ends would hold the finished job in MLflow's own HTTP retries for
minutes (seven retries with backoff, two minutes per request), deaf to Ctrl-C, and end it with a
traceback. The calls run in a worker thread instead, and the job watches the server: while it answers
(its `/health`, every few seconds) the upload of a large job folder may take as long as it needs; once
it has not answered for `tracking.finish_timeout_s`, the job stops waiting and ends with one line (the
results are on disk in the job folder; rerunning the same command logs them: the rerun reattaches the
MLflow run, finds every item-run done and calls no provider). Ctrl-C and SIGTERM end the wait within
seconds. A local store (sqlite, a folder) cannot go away: it is waited for, still listening to signals."""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections.abc import Callable

import httpx2
import requests
from mlflow.exceptions import MlflowException

from giant.interrupt import Interrupted, StopRequest

POLL_S = 0.2  # how often the waiting job looks for the worker's end and for a SIGTERM
PROBE_EVERY_S = 2.0  # how often it asks the server whether it still answers
PROBE_TIMEOUT_S = 2.0


class TrackingUnreachable(Exception):
    """The tracking server stopped answering before it took the job's end, or failed on it."""


def server_probe(uri: str) -> Callable[[], bool] | None:
    """For an http(s) tracking URI, a check that the server answers at all (any status of `/health`,
    as giant.tracking.mlflow_logger.check_server asks); None for a local store."""
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme not in ("http", "https"):
        return None
    where = f"{parts.scheme}://{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"

    def answers() -> bool:
        try:
            httpx2.get(f"{where}/health", timeout=PROBE_TIMEOUT_S)
        except (httpx2.RequestError, httpx2.InvalidURL):
            return False
        return True

    return answers


def within(
    seconds: float,
    work: Callable[[], None],
    *,
    answers: Callable[[], bool] | None,
    stop: StopRequest | None = None,
) -> None:
    """Runs `work` (MLflow calls) in a daemon thread and waits for it while `answers()` says the server
    answers; raises TrackingUnreachable once it has not for `seconds` (or when `work` fails on an
    MlflowException or a network error), Interrupted on a SIGTERM recorded by `stop`, and lets Ctrl-C's
    KeyboardInterrupt through; any other exception of `work` is raised as it is (a bug, not an outage)."""
    failure: list[BaseException] = []
    done = threading.Event()

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # handed to the waiting thread
            failure.append(exc)
        finally:
            done.set()

    # a daemon: a server that never answers must not keep the process alive after the job has ended
    threading.Thread(target=run, name="giant-mlflow-finish", daemon=True).start()
    last_answer = next_probe = time.monotonic()
    while not done.wait(POLL_S):  # a Ctrl-C raises KeyboardInterrupt here
        if stop is not None and stop.requested:
            raise Interrupted(stop)
        now = time.monotonic()
        if answers is None or now < next_probe:
            continue
        if answers():
            last_answer = time.monotonic()
        elif time.monotonic() - last_answer >= seconds:
            raise TrackingUnreachable(f"did not answer for {seconds:g} s")
        next_probe = time.monotonic() + min(PROBE_EVERY_S, seconds / 4)
    if failure:
        exc = failure[0]
        if isinstance(exc, MlflowException | requests.RequestException | OSError):
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise TrackingUnreachable(f"failed ({first[:200]})") from exc
        raise exc
