"""A job asked to stop (SIGTERM, or submitit's requeue signal) stops cleanly instead of dying mid-write.

SLURM time limits, preemption, `scancel` and container stops end a process with a signal. Python's
default SIGTERM action kills the process at once: the MLflow run stays RUNNING and a file being written
is cut. Here the handlers only record the request; the runner then starts no new item and no new
provider call, the job closes its MLflow run as KILLED and exits non-zero, and a rerun resumes.

Under submitit (`launcher=submitit_slurm` / `submitit_local`) the requeue signal (SIGUSR2 by default)
gets the same clean stop first; then submitit's own handler, saved when ours was installed, is called
to checkpoint and requeue the job: called at once from inside the signal, it would `sys.exit` in the
middle of whatever the job was doing.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any

from giant.errors import EXIT_TERMINATED

_Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None

_last_stop: str | None = None  # why this process last stopped a job; read by the sweep callback
_job_running = False  # a sweep job runs in this process (job_in_progress): a SIGTERM waits for it
_pending: int | None = None  # a signal the sweep got while its job was not yet listening


class StopRequest:
    """Set from a signal handler; read by the runner before each item and each provider call."""

    def __init__(self, requeue_signal: int | None = None) -> None:
        self.signum: int | None = None
        self.requeue_signal = requeue_signal
        self.requeue_handler: _Handler = None  # submitit's handler, saved when ours replaced it
        self._listeners: list[Callable[[], None]] = []

    @property
    def requested(self) -> bool:
        return self.signum is not None

    @property
    def requeues(self) -> bool:
        """True when the stop came from submitit's requeue signal (time limit or preemption)."""
        return self.signum is not None and self.signum == self.requeue_signal

    @property
    def reason(self) -> str:
        if self.signum is None:
            return ""
        name = signal.Signals(self.signum).name
        return f"{name} (time limit or preemption)" if self.requeues else name

    def request(self, signum: int) -> None:
        """Records the first signal and wakes the runner; never raises (it runs in a signal handler)."""
        if self.signum is None:
            self.signum = signum
        for listener in list(self._listeners):
            listener()

    async def wait(self) -> None:
        """Returns once a stop is requested (the signal handler wakes the event loop)."""
        loop = asyncio.get_running_loop()
        event = asyncio.Event()

        def wake() -> None:
            loop.call_soon_threadsafe(event.set)

        self._listeners.append(wake)  # before the check: a signal in between must not be missed
        try:
            if not self.requested:
                await event.wait()
        finally:
            self._listeners.remove(wake)


class Interrupted(Exception):
    """Raised by the job after a clean stop; the CLI turns it into one line and the exit code."""

    def __init__(self, stop: StopRequest) -> None:
        super().__init__(f"stopped by {stop.reason}")
        self.stop = stop

    @property
    def hint(self) -> str:
        """The one line for the user: what happened and how the work continues."""
        if self.stop.requeues:
            return f"stopped by {self.stop.reason}; submitit requeues the job and it resumes from its results"
        return f"stopped by {self.stop.reason}; rerun the same command to resume (finished items are kept)"

    def hand_over(self) -> None:
        """Let submitit checkpoint and requeue the job (it exits the process); no-op otherwise."""
        handler, signum = self.stop.requeue_handler, self.stop.signum
        if self.stop.requeues and callable(handler) and signum is not None:
            handler(signum, None)


def stopped_by() -> str | None:
    """The reason of the last clean stop in this process (None if there was none)."""
    return _last_stop


def note_stop(reason: str) -> None:
    """Record a stop that did not come through a handler here (Ctrl-C's KeyboardInterrupt)."""
    global _last_stop
    _last_stop = reason


def submitit_signal() -> int | None:
    """The signal submitit requeues on (SIGUSR2 unless SUBMITIT_PREEMPT_SIGNAL says otherwise), when
    this process is a submitit job; None otherwise."""
    if not os.environ.get("SUBMITIT_EXECUTOR"):
        return None
    from submitit.core.job_environment import JobEnvironment

    return int(getattr(signal, f"SIG{JobEnvironment.USR_SIG}"))


@contextmanager
def stop_on_signals() -> Iterator[StopRequest]:
    """SIGTERM (and submitit's requeue signal) only request a stop while the block runs; the previous
    handlers are restored on exit. submitit's requeue handler is kept on the StopRequest, so that the
    caller can hand the job over for requeueing once its records are closed."""
    requeue = submitit_signal()
    stop = StopRequest(requeue_signal=requeue)
    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        yield stop
        return
    signums = [signal.SIGTERM] + ([requeue] if requeue is not None else [])

    def handle(signum: int, frame: FrameType | None) -> None:
        stop.request(signum)
        note_stop(stop.reason)

    previous = {signum: signal.signal(signum, handle) for signum in signums}
    if requeue is not None:
        stop.requeue_handler = previous[requeue]
    _take_pending(stop)
    try:
        yield stop
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _take_pending(stop: StopRequest) -> None:
    """A SIGTERM that reached the sweep while its job was starting, before the job listened, stops
    the job at its first check."""
    global _pending
    if _pending is not None:
        stop.request(_pending)
        _pending = None


@contextmanager
def job_in_progress() -> Iterator[None]:
    """Marks a sweep job as running in this process (Hydra's basic launcher): a SIGTERM to the sweep
    then stops the job at its next check, where it closes its MLflow run, instead of exiting in the
    middle of its setup or its MLflow writes. Between two jobs the sweep still ends at once."""
    global _job_running
    _job_running = True
    try:
        yield
    finally:
        _job_running = False


def guard_sweep() -> None:
    """For the launching process of a sweep (`-m`): SIGTERM is passed on to the job processes it started
    (joblib's workers, submitit's local controllers), which stop cleanly themselves and end the sweep;
    a basic-launcher job running here stops at its next check (job_in_progress; while its items run,
    its own handler replaces this one: stop_on_signals); with no job running (the basic launcher
    between jobs, or SLURM jobs that run elsewhere) the sweep ends at once. The stop is recorded
    either way, so the sweep's parent run is closed as interrupted."""
    signal.signal(signal.SIGTERM, partial(_on_sigterm, forward=True))


def guard_run() -> None:
    """For a single run's process, from its first line of giant code: a SIGTERM while Hydra composes
    the config or the job sets up (before the items' own handler listens) stops the job at its first
    check, where it closes its MLflow run, or, before the job started, ends the process with one line
    and exit 143 instead of the default silent death."""
    signal.signal(signal.SIGTERM, partial(_on_sigterm, forward=False))


def _on_sigterm(signum: int, frame: FrameType | None, *, forward: bool) -> None:
    global _pending
    note_stop(signal.Signals(signum).name)
    children = _children() if forward else []
    for pid in children:
        with suppress(ProcessLookupError):  # ended meanwhile
            os.kill(pid, signum)
    if children:
        return
    if _job_running:
        _pending = signum
        return
    print("run_eval: stopped by SIGTERM; rerun the same command to resume", file=sys.stderr)
    raise SystemExit(EXIT_TERMINATED)


def _children() -> list[int]:
    """This process's child processes (Linux /proc; none elsewhere)."""
    pids: list[int] = []
    for listing in Path("/proc/self/task").glob("*/children"):
        try:
            pids += [int(pid) for pid in listing.read_text().split()]
        except OSError:
            continue
    return pids
