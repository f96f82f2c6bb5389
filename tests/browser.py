"""A real headless browser for the tests that open the HTML pages giant writes.

Debian's `chromium` driven by Playwright (the `playwright` Python package from PyPI, launched on
/usr/bin/chromium: Playwright's own browser download is never used). `.ci/run` installs chromium;
without it these tests skip locally with the install line and fail under CI, like the SLURM tests.

One Chromium runs per session (the `chromium` fixture); use the `browser` fixture for a Playwright
Browser connected to it, `serve(folder)` for a loopback HTTP server over a
folder, and `open_page(browser, url)` for a page that records script errors.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
INSTALL = "apt-get install -y --no-install-recommends chromium"
# Without the background-networking flags Chromium keeps dialling Google's hosts on a closed network.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
STARTUP_S = 60


def unavailable(message: str) -> None:
    """Skip on a user's machine, fail under CI (where .ci/run installs what is missing)."""
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One headless Chromium for the session (each pytest-xdist worker's), in a process group of its
    own and stopped as a whole at the end; its DevTools endpoint, which the `browser` fixture of each
    module connects to."""
    from giant.tracking.ui import stop_group

    if CHROMIUM is None:
        unavailable(f"headless Chromium is not installed; install it with: {INSTALL}")
    profile = tmp_path_factory.mktemp("chromium")
    command = [CHROMIUM, "--headless", *FLAGS, "--remote-debugging-port=0", f"--user-data-dir={profile}"]
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        yield _endpoint(process, profile / "DevToolsActivePort")
    finally:
        stop_group(process)


def _endpoint(process: subprocess.Popen[bytes], port_file: Path) -> str:
    """ws://... of the DevTools server Chromium writes into its profile once it listens."""
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        lines = port_file.read_text().split() if port_file.is_file() else []
        if len(lines) == 2:
            return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
        if process.poll() is not None:
            pytest.fail(f"chromium exited with code {process.returncode} before it listened")
        time.sleep(0.1)
    pytest.fail(f"chromium did not listen within {STARTUP_S} s")


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    """The session's Chromium, as a Playwright Browser for one test module (each test opens a context
    of its own: open_page). Not one Playwright for the session: its sync API keeps its event loop
    running on the main thread while it is open, and every later asyncio.run() in the session
    (episodes, the runner) would fail; keep browser tests in modules of their own."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed; install it with: pip install -e '.[dev]'")
    with sync_playwright() as pw:
        yield pw.chromium.connect_over_cdp(chromium)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    """Serve `folder` on 127.0.0.1 (a free port); yields the base URL without a trailing slash."""
    with loopback(functools.partial(_Quiet, directory=str(folder))) as base:
        yield base


@contextlib.contextmanager
def loopback(handler: Any) -> Iterator[str]:
    """Any request handler on 127.0.0.1 (a free port), in a thread; yields the base URL without a
    trailing slash and shuts the server down after."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class OpenedPage:
    """A loaded page and every script error and console error it produced."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.errors: list[str] = []
        page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        page.on(
            "console",
            lambda msg: self.errors.append(f"console: {msg.text}") if msg.type == "error" else None,
        )


@contextlib.contextmanager
def open_page(browser: Any, url: str, width: int = 1400, height: int = 1000) -> Iterator[OpenedPage]:
    """Open `url` in a fresh context (no shared cache or storage between tests)."""
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        opened = OpenedPage(context.new_page())
        opened.page.goto(url, wait_until="load")
        yield opened
    finally:
        context.close()


def shots(tmp_path: Path) -> Path:
    """Where a test's screenshots go: $GIANT_PICTURES (`make pictures`: docs/images/), else tmp_path."""
    folder = Path(os.environ.get("GIANT_PICTURES", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def screenshot(page: Any, path: Path) -> None:
    """A viewport screenshot in 256 colours: a slide picture drops from ~1 MB to a few hundred kB,
    which is what a repository should carry."""
    page.screenshot(path=str(path))
    with Image.open(path) as shot:
        shot.convert("RGB").quantize(256).save(path, optimize=True)
