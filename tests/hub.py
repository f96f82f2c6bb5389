"""Hugging Face Hubs on 127.0.0.1 for the tests of the CSV download, and the CLI run against them.

`closed_port()` is a Hub that refuses every connection; `silent_hub()` one that accepts and never
answers; `HubStub` a minimal working Hub (HEAD and GET of /datasets/<repo>/resolve/main/<file>, as
huggingface_hub's hf_hub_download asks them). `run_script` starts a CLI script with HF_ENDPOINT on one
of them and an empty HF_HOME, so no test ever reaches the real Hub or the user's cache and token.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPO, FILE = "tbuckley/MultiPathQA", "MultiPathQA.csv"  # conf/dataset_common.yaml's hf_repo, hf_file
COMMIT = "0123456789abcdef0123456789abcdef01234567"  # the stub repo's one revision
# The subprocess's limit, generous for a loaded CI machine (the interpreter's start alone took seconds
# there): a run that does not give up on an unreachable Hub fails on it. That it gave up for the right
# reason is what the one line says (the refused connection, or the 5 s timeout it names).
LIMIT_S = 300.0


def closed_port() -> str:
    """The URL of a loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@contextmanager
def silent_hub() -> Iterator[str]:
    """A loopback server whose kernel completes every connection and which never sends a byte."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


@dataclass
class HubStub:
    """One dataset file at COMMIT; `requests` counts what reached it."""

    body: bytes
    url: str = ""
    requests: int = 0

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self
        path = f"/datasets/{REPO}/resolve/main/{FILE}"
        etag = hashlib.sha256(stub.body).hexdigest()

        class Handler(BaseHTTPRequestHandler):
            def do_HEAD(self) -> None:
                self._answer(with_body=False)

            def do_GET(self) -> None:
                self._answer(with_body=True)

            def _answer(self, *, with_body: bool) -> None:
                stub.requests += 1
                if self.path != path:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("ETag", f'"{etag}"')
                self.send_header("Content-Length", str(len(stub.body)))
                self.end_headers()
                if with_body:
                    self.wfile.write(stub.body)

            def log_message(self, *args: object) -> None:  # keep the test output clean
                pass

        return Handler

    @contextmanager
    def serving(self) -> Iterator[HubStub]:
        server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


def hub_env(hub_url: str, tmp: Path, **extra: str) -> dict[str, str]:
    """The environment of a process that must find the Hub at `hub_url` only: no CSV given through
    GIANT_MULTIPATHQA_CSV, no setting of the user's Hub (offline mode, token, cache, timeouts)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIANT_", "MLFLOW_", "HF_"))}
    env.update(HF_ENDPOINT=hub_url, HF_HOME=str(tmp / "hf_home"), GIANT_OUTPUT_DIR=str(tmp / "outputs"))
    env.update(extra)
    return env


def run_script(script: str, *overrides: str, hub_url: str, tmp: Path) -> Run:
    """scripts/<script> as a user starts it, with its cache (and so the Hub's) in `tmp`."""
    command = [sys.executable, str(ROOT / "scripts" / script), *overrides, f"paths.cache_dir={tmp / 'cache'}"]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=LIMIT_S, cwd=tmp, env=hub_env(hub_url, tmp)
    )
    return Run(done.returncode, done.stdout, done.stderr)


def assert_one_line_failure(run: Run, prog: str, reason_ends: str) -> None:
    """Exit code 2 (within LIMIT_S), and one whole line on stderr that names dataset.csv_path as the fix:
    the reason in it ends in `reason_ends` (the underlying error is shortened by words, not cut
    mid-word), and nothing of the Hub's retries shows on either stream, nor any line twice."""
    assert run.returncode == 2, (run.stdout, run.stderr)
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, run.stderr
    line = lines[0]
    assert line.startswith(f"{prog}: could not download {FILE} from the Hugging Face dataset {REPO} ("), line
    assert line.endswith(f"; pass dataset.csv_path=/path/to/{FILE}"), line
    reason = line.split(" (", 1)[1].rsplit(") and no copy is cached in ", 1)[0]
    assert reason.endswith(reason_ends), line
    everything = [line for line in (run.stdout + run.stderr).splitlines() if line.strip()]
    assert len(everything) == len(set(everything)), everything
    assert "Retry" not in run.stdout + run.stderr and "huggingface_hub" not in run.stdout + run.stderr
