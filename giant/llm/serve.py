"""A model server started for one job and stopped with it (`server=vllm` or `server=transformers`,
conf/server/).

On a cluster the GPUs belong to the job, so the server has to live inside it: started before the
run, asked until it answers (`server.ready_path`: vLLM's `GET /v1/models` lists the model once it is
loaded; `transformers serve` loads it before it listens, and its `GET /health` says so even where its
model list fails), and stopped when the job ends however it ends (done,
failed, SIGTERM from SLURM's time limit or scancel). A sweep over several open models is then one
`-m` command, each job serving its own model on its own port, and no server outlives its job.

The server runs in its own process group, so stopping it also stops the workers it forked (vLLM's
engine and tensor-parallel processes); its output goes to a log file in the job folder, the file a
failed start names.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import Any

import httpx2
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from giant.errors import ConfigError

log = logging.getLogger(__name__)

POLL_S = 1.0  # between two GET /v1/models while the server loads
STOP_GRACE_S = 30.0  # SIGTERM, then this long for the server to exit, then SIGKILL


class ServerSettings(BaseModel):
    """conf/server/<name>.yaml, where the defaults are."""

    model_config = ConfigDict(extra="forbid")

    command: list[str] = Field(
        min_length=1, description="The executable and its subcommand, e.g. [vllm, serve] or a path."
    )
    host: str = Field(min_length=1, description="The address the server listens on (the job's own node).")
    port: int | None = Field(
        ge=1, le=65535, description="Its port; null: a free one, so jobs sharing a node do not collide."
    )
    startup_timeout_s: float = Field(
        gt=0, description="Seconds to wait for the server to answer (a first start downloads the weights)."
    )
    args: list[str] = Field(description="More flags for the server, after the model, host and port.")
    ready_path: str = Field(
        pattern=r"^/",
        description="The path that answers 200 once the model is loaded: /v1/models (vLLM) or /health.",
    )
    log_file: str = Field(min_length=1, description="The server's log, in the job folder.")

    @classmethod
    def from_data(cls, data: Any) -> ServerSettings:
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(["server", *(str(part) for part in error["loc"])])
            raise ConfigError(f"{where}: {error['msg']}") from None

    def on_a_port(self) -> ServerSettings:
        """These settings with the port fixed (a free one if none is set), so the provider's base_url
        is known, and the whole config checked, before the server starts."""
        return self if self.port is not None else self.model_copy(update={"port": _free_port(self.host)})

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def ready_url(self) -> str:
        return f"http://{self.host}:{self.port}{self.ready_path}"


class Server:
    """A started server: where it answers and how to stop it."""

    def __init__(
        self, process: subprocess.Popen[bytes], base_url: str, log_path: Path, ready_url: str
    ) -> None:
        self.process = process
        self.base_url = base_url
        self.log_path = log_path
        self.ready_url = ready_url

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL after STOP_GRACE_S; idempotent."""
        if self.process.poll() is not None:
            return
        _signal_group(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            _signal_group(self.process.pid, signal.SIGKILL)
            self.process.wait()
        log.info("server: stopped (pid %d)", self.process.pid)


@contextmanager
def served(settings: ServerSettings, model: str, job_dir: Path) -> Iterator[Server]:
    """The server for `model` at `settings.base_url` (settings.on_a_port()), answering before this
    yields and stopped when the block exits. A SIGTERM while it loads (SLURM's scancel) raises
    SystemExit here, so the server is stopped then too."""
    if settings.port is None:
        raise ValueError("served() needs a port: pass settings.on_a_port()")
    port = str(settings.port)
    command = [*settings.command, model, "--host", settings.host, "--port", port, *settings.args]
    log_path = job_dir / settings.log_file
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as out:
        try:
            process = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            raise ConfigError(
                f"server: cannot start {' '.join(command)} ({exc}); check server.command"
            ) from None
    server = Server(process, settings.base_url, log_path, settings.ready_url)
    print(f"server: {' '.join(command)} (pid {process.pid}, log {log_path})")
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        try:
            _wait_until_up(server, settings.startup_timeout_s, model)
        finally:
            signal.signal(signal.SIGTERM, previous)  # the run installs its own stop (giant.interrupt)
        yield server
    finally:
        server.stop()


def _wait_until_up(server: Server, timeout_s: float, model: str) -> None:
    deadline = time.monotonic() + timeout_s
    url = server.ready_url
    while True:
        code = server.process.poll()
        if code is not None:
            raise ConfigError(
                f"server: exited with code {code} before answering {url}; see {server.log_path}"
            )
        if _answers(url):
            print(f"server: {model} answers at {server.base_url}")
            return
        if time.monotonic() >= deadline:
            raise ConfigError(
                f"server: no answer from {url} within {timeout_s:g} s (server.startup_timeout_s); "
                f"see {server.log_path}"
            )
        time.sleep(POLL_S)


def _answers(url: str) -> bool:
    """True once the server lists its models (vLLM answers 200 only when the model is loaded) or
    says it is healthy (`{"status": "ok"}`: transformers serve, which listens only once loaded)."""
    try:
        reply = httpx2.get(url, timeout=5)
        said = reply.json() if reply.status_code == 200 else None
    except (httpx2.HTTPError, httpx2.InvalidURL, ValueError):
        return False  # refused while it starts, a timeout, a half-written body or one not JSON
    return isinstance(said, dict) and (isinstance(said.get("data"), list) or said.get("status") == "ok")


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError):  # already gone
        os.killpg(pid, sig)  # start_new_session: the group id is the server's pid


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)
