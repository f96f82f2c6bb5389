"""The suite's rule for job subprocesses, enforced while it runs: a test that starts a job script
(scripts/run_eval.py, ask.py, rescore.py, fetch_slides.py) in a subprocess, itself or through a fixture
it uses, is marked `@pytest.mark.subprocess_job`. A job that is not about the process runs in-process
through `giant.evaluate`; tests/test_suite_shape.py keeps the marked ones few.

One audit hook (`subprocess.Popen`, raised before any process starts) sees every start, from
subprocess.run, Popen or asyncio alike; while an unmarked test runs, a job script's start raises.
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePath

import pytest

MARKER = "subprocess_job"
JOB_SCRIPTS = frozenset({"run_eval.py", "ask.py", "rescore.py", "fetch_slides.py"})

# The tests running now, innermost last, each with whether it is marked (a pytester run nests one).
_running: list[tuple[str, bool]] = []


class UnmarkedJobSubprocess(RuntimeError):
    """A job script started in a subprocess by a test without the marker."""


def job_script(args: object) -> str | None:
    """The job script an argv starts (its file name), else None. A script passed to `python -c`
    that runs it (runpy) counts too: any argument naming one."""
    if isinstance(args, str | bytes | PurePath):
        args = [args]
    for arg in args if isinstance(args, list | tuple) else ():
        text = arg.decode(errors="replace") if isinstance(arg, bytes) else str(arg)
        for word in text.split():
            if PurePath(word).name in JOB_SCRIPTS:
                return PurePath(word).name
    return None


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event != "subprocess.Popen" or not _running or _running[-1][1]:
        return
    if (script := job_script(args[1])) is not None:
        raise UnmarkedJobSubprocess(
            f"{_running[-1][0]} starts {script} in a subprocess: run the job in-process with "
            f"giant.evaluate, or mark the test @pytest.mark.{MARKER} if the process is what it tests"
        )


_installed: list[bool] = []
# The marked tests of a collection of the whole suite (None for a part of it), before -m or -k
# deselect any: tests/test_suite_shape.py counts them without collecting the suite a second time.
MARKED = pytest.StashKey[list[str] | None]()


def pytest_configure(config: pytest.Config) -> None:
    if not _installed:  # an audit hook stays for the process's life: one, whatever pytest runs in it
        sys.addaudithook(_audit)
        _installed.append(True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    """The item's setup (module fixtures included), call and teardown run under the rule."""
    _running.append((item.nodeid, item.get_closest_marker(MARKER) is not None))
    try:
        return (yield)
    finally:
        _running.pop()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    suite = {config.rootpath, config.rootpath / "tests"}
    whole = all("::" not in arg and Path(arg).resolve() in suite for arg in config.args)
    config.stash[MARKED] = [i.nodeid for i in items if i.get_closest_marker(MARKER)] if whole else None


@contextmanager
def shared(name: str) -> Iterator[None]:
    """A session fixture's job subprocess, run once for many tests (the demo store's sweep,
    tests/helpers/store.py): allowed in whichever test's setup builds it. The test of what that
    subprocess itself did carries the marker and is counted."""
    _running.append((name, True))
    try:
        yield
    finally:
        _running.pop()
