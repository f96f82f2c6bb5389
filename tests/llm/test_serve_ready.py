"""giant.llm.serve's readiness poll (`server.ready_path`: `GET /v1/models` until the model is listed,
or `GET /health` until it says ok, as transformers serve does) against a loopback
server, and the rule behind it: giant speaks HTTP through httpx2 only, its one client (proxy, TLS and
timeout behaviour the same for every request it sends)."""

from __future__ import annotations

import ast
import socket
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
import yaml

from giant.llm.serve import _answers
from scripts.import_layers import modules
from tests.browser import loopback

OTHER_CLIENTS = ("urllib.request", "http.client", "requests", "urllib3", "aiohttp", "httpx")
REPLIES = {  # path: (status, body)
    "/ready/v1/models": (200, b'{"object": "list", "data": [{"id": "Qwen/Qwen2.5-VL-7B-Instruct"}]}'),
    "/loading/v1/models": (503, b'{"error": "the model is loading"}'),
    "/proxy/v1/models": (200, b"<html>a login page</html>"),
    "/list/v1/models": (200, b"[]"),
    "/empty/v1/models": (200, b'{"object": "list"}'),
    "/health": (200, b'{"status": "ok"}'),
    "/sick/health": (503, b'{"status": "unhealthy", "reason": "cb_worker_dead"}'),
    "/odd/health": (200, b'{"status": "starting"}'),
}


class _Models(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/torn/v1/models":  # a body cut short: the server died while answering
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b'{"data": [')
            return
        status, body = REPLIES[self.path]
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with loopback(_Models) as url:
        yield url


def test_ready_once_the_models_are_listed(base: str) -> None:
    assert _answers(f"{base}/ready/v1/models")


@pytest.mark.parametrize("flavour", ["loading", "proxy", "list", "empty", "torn"])
def test_anything_else_is_not_ready_yet(base: str, flavour: str) -> None:
    assert not _answers(f"{base}/{flavour}/v1/models")


def test_a_health_path_is_ready_once_it_says_ok(base: str) -> None:
    assert _answers(f"{base}/health")
    assert not _answers(f"{base}/sick/health") and not _answers(f"{base}/odd/health")


def test_each_server_option_waits_on_its_own_path() -> None:
    from giant.llm.serve import ServerSettings
    from tests.realserver.served import CONF

    paths = {}
    for conf in sorted(CONF.parent.glob("*.yaml")):
        data = yaml.safe_load(conf.read_text())["server"]
        paths[conf.stem] = ServerSettings.from_data({**data, "port": 8000}).ready_url
    assert paths == {
        "transformers": "http://127.0.0.1:8000/health",
        "vllm": "http://127.0.0.1:8000/v1/models",
    }


def test_a_port_nobody_listens_on_is_not_ready() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert not _answers(f"http://127.0.0.1:{port}/v1/models")


def test_giant_speaks_http_only_through_httpx2() -> None:
    found = []
    for module, path in sorted(modules().items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            found += [f"{module}: {name}" for name in names if name in OTHER_CLIENTS]
    assert not found, f"HTTP clients other than httpx2: {found}"
