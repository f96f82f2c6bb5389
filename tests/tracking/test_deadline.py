"""giant.tracking.deadline: the job's last MLflow calls run in a worker while the job watches the
server. Real threads and a real clock; the server is a probe that answers or not, and the work real
callables (an upload that takes its time, a server error, a bug)."""

from __future__ import annotations

import signal
import threading

import pytest
from mlflow.exceptions import MlflowException

from giant.interrupt import Interrupted, StopRequest
from giant.tracking.deadline import TrackingUnreachable, server_probe, within


def test_a_silent_server_ends_the_wait_after_the_bound() -> None:
    release = threading.Event()
    with pytest.raises(TrackingUnreachable, match=r"did not answer for 0\.5 s"):
        within(0.5, release.wait, answers=lambda: False)
    release.set()


def test_a_server_that_answers_is_waited_for_past_the_bound() -> None:
    """A large job folder uploads longer than the bound: the server answers, so the job waits."""
    done = []
    within(0.2, lambda: done.append(threading.Event().wait(1.0)), answers=lambda: True)
    assert done == [False]  # the work ran to its end


def test_a_sigterm_ends_the_wait_within_a_poll() -> None:
    stop = StopRequest()
    release = threading.Event()
    threading.Timer(0.3, stop.request, args=(signal.SIGTERM,)).start()
    with pytest.raises(Interrupted, match="SIGTERM"):
        within(600, release.wait, answers=lambda: True, stop=stop)
    release.set()


def test_a_server_error_is_an_outage_and_a_bug_is_a_bug() -> None:
    def refused() -> None:
        raise MlflowException("API request to http://127.0.0.1:1/api failed: Connection refused\nand more")

    with pytest.raises(TrackingUnreachable, match=r"^failed \(API request .* Connection refused\)$"):
        within(60, refused, answers=None)

    def bug() -> None:
        raise TypeError("a bug in giant")

    with pytest.raises(TypeError, match="a bug in giant"):
        within(60, bug, answers=None)


def test_only_a_remote_server_is_probed() -> None:
    assert server_probe("sqlite:////tmp/mlflow.db") is None
    assert server_probe("file:///tmp/mlruns") is None
    probe = server_probe("http://127.0.0.1:1")  # nothing listens on port 1
    assert probe is not None and probe() is False


def test_mlflow_s_own_retries_fit_the_bound_of_the_job_s_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """An abandoned worker must not go on retrying a gone server for minutes: MLflow's retries and
    request timeout come from tracking.finish_timeout_s, read by mlflow at each request."""
    from mlflow.environment_variables import MLFLOW_HTTP_REQUEST_MAX_RETRIES, MLFLOW_HTTP_REQUEST_TIMEOUT

    from giant.tracking.deadline import bound_mlflow_http, http_bounds, restore_env

    for seconds in (3.0, 60.0, 600.0):
        retries, timeout = http_bounds(seconds)
        pauses = [0.0] + [2.0 * 2**k for k in range(1, retries)]  # urllib3's sleeps between tries
        assert sum(pauses) <= seconds / 2 and 0 <= retries <= 7
        assert timeout <= min(120, max(5, seconds / 4 + 1))
    assert http_bounds(60.0) == (4, 15)  # MLflow's defaults: 7 retries, 120 s a request
    assert http_bounds(3600.0) == (7, 120)  # a long bound never raises them
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", raising=False)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")  # the user's own: kept
    set_now = bound_mlflow_http(60.0)
    assert set_now == {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "4"}
    assert MLFLOW_HTTP_REQUEST_MAX_RETRIES.get() == 4 and MLFLOW_HTTP_REQUEST_TIMEOUT.get() == 30
    restore_env(set_now)
    assert MLFLOW_HTTP_REQUEST_MAX_RETRIES.get() == 7 and MLFLOW_HTTP_REQUEST_TIMEOUT.get() == 30
