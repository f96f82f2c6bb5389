"""The job's last MLflow calls, bounded in time. A remote tracking server that stops answering as a job
ends would hold the finished job in MLflow's own HTTP retries for minutes (seven retries with backoff,
two minutes per request), deaf to Ctrl-C, and end it with a traceback. The calls run in a worker
thread instead; the job waits at most `tracking.finish_timeout_s`, listening for Ctrl-C and SIGTERM,
and then ends with one line: the results are on disk in the job folder, and rerunning the same command
logs them (the rerun reattaches the MLflow run, finds every item-run done and calls no provider)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import requests
from mlflow.exceptions import MlflowException

from giant.interrupt import Interrupted, StopRequest

POLL_S = 0.2  # how often the waiting job looks at the clock and for a SIGTERM


class TrackingUnreachable(Exception):
    """The tracking server did not take the job's end within the bound, or failed on it."""


def within(seconds: float, work: Callable[[], None], *, stop: StopRequest | None = None) -> None:
    """Runs `work` (MLflow calls) in a daemon thread and waits at most `seconds` for it. Raises
    TrackingUnreachable when the time is up or the server failed (an MlflowException or a network
    error from `work`), Interrupted on a SIGTERM recorded by `stop`, KeyboardInterrupt on Ctrl-C;
    any other exception of `work` is raised as it is (a bug, not an outage)."""
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
    deadline = time.monotonic() + seconds
    while not done.wait(POLL_S):  # a Ctrl-C raises KeyboardInterrupt here
        if stop is not None and stop.requested:
            raise Interrupted(stop)
        if time.monotonic() >= deadline:
            raise TrackingUnreachable(f"did not answer within {seconds:g} s")
    if failure:
        exc = failure[0]
        if isinstance(exc, MlflowException | requests.RequestException | OSError):
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise TrackingUnreachable(f"failed ({first[:200]})") from exc
        raise exc
