"""A real headless browser for the tests that open the HTML pages giant writes.

Debian's `chromium` driven by Playwright (the `playwright` Python package from PyPI, launched on
/usr/bin/chromium: Playwright's own browser download is never used). `.ci/run` installs chromium;
without it these tests skip locally with the install line and fail under CI, like the SLURM tests.

Use the `browser` fixture for a Playwright Browser, `serve(folder)` for a loopback HTTP server over a
folder, and `open_page(browser, url)` for a page that records script errors.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

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


def unavailable(message: str) -> None:
    """Skip on a user's machine, fail under CI (where .ci/run installs what is missing)."""
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium per test module (a launch costs about a second). Not per session:
    Playwright's sync API keeps its event loop running on the main thread while it is open, and every
    later asyncio.run() in the session (episodes, the runner) would fail; keep browser tests in
    modules of their own."""
    if CHROMIUM is None:
        unavailable(f"headless Chromium is not installed; install it with: {INSTALL}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed; install it with: pip install -e '.[dev]'")
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield launched
        finally:
            launched.close()


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
