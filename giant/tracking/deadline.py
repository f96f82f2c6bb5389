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

import math
import os
import threading
import time
import urllib.parse
from collections.abc import Callable

import httpx2
from mlflow.exceptions import MlflowException

from giant.interrupt import Interrupted, StopRequest

POLL_S = 0.2  # how often the waiting job looks for the worker's end and for a SIGTERM
PROBE_EVERY_S = 2.0  # how often it asks the server whether it still answers
PROBE_TIMEOUT_S = 2.0


# MLflow's HTTP client settings (mlflow.environment_variables), read at each request
MAX_RETRIES_ENV = "MLFLOW_HTTP_REQUEST_MAX_RETRIES"  # default 7
TIMEOUT_ENV = "MLFLOW_HTTP_REQUEST_TIMEOUT"  # default 120 s per request
BACKOFF_ENV = "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR"  # default 2: urllib3 sleeps 0, 2f, 4f, ... between tries
MIN_REQUEST_TIMEOUT_S = 5
MLFLOW_RETRIES, MLFLOW_TIMEOUT_S = 7, 120  # MLflow's defaults: a bound never raises them


def http_bounds(seconds: float, backoff_factor: float = 2.0) -> tuple[int, int]:
    """(retries, per-request timeout in s) for MLflow calls that give up within about `seconds`: the
    backoff between tries takes at most half of it, and each try at most a quarter (at least 5 s, what
    a slow but healthy server may need for a large batch), never more than MLflow's defaults."""
    retries, slept = 0, 0.0
    while retries < MLFLOW_RETRIES:
        pause = 0.0 if retries == 0 else backoff_factor * 2**retries  # before try retries + 2
        if slept + pause > seconds / 2:
            break
        slept += pause
        retries += 1
    return retries, min(MLFLOW_TIMEOUT_S, max(MIN_REQUEST_TIMEOUT_S, math.ceil(seconds / 4)))


def bound_mlflow_http(seconds: float) -> dict[str, str]:
    """Sets MLflow's HTTP retries and request timeout from tracking.finish_timeout_s before the job's
    last calls. The wait in `within` ends on time either way, but the worker thread it abandons would
    go on retrying a gone server for minutes (seven tries with backoff, 120 s each): in a sweep whose
    jobs share a process, that thread outlives its job. A value exported by the user is kept. Returns
    what it set (to be undone by restore_env once the calls ended)."""
    try:
        factor = float(os.environ.get(BACKOFF_ENV, "2"))
    except ValueError:
        factor = 2.0
    retries, timeout = http_bounds(seconds, factor)
    wanted = {MAX_RETRIES_ENV: str(retries), TIMEOUT_ENV: str(timeout)}
    set_now = {key: value for key, value in wanted.items() if key not in os.environ}
    os.environ.update(set_now)
    return set_now


def restore_env(set_now: dict[str, str]) -> None:
    """Removes what bound_mlflow_http set (still the same value): the next job's mid-run calls get
    MLflow's full retries again, which bridge an outage of a few minutes."""
    for key, value in set_now.items():
        if os.environ.get(key) == value:
            del os.environ[key]


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
        if isinstance(exc, MlflowException | OSError):  # requests' errors (MLflow's client) are OSErrors
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise TrackingUnreachable(f"failed ({first[:200]})") from exc
        raise exc
