"""A stand-in for `vllm serve MODEL --host H --port P [flags]`: the loopback vLLM stub on that port.

Tests put it on PATH as `vllm` (`install()`), so giant.llm.serve starts it as it would start vLLM.
It writes its pid to $FAKE_VLLM_PIDS (one line per start) so a test can check it is gone after the
job; $FAKE_VLLM_MODE=silent never opens the port (a server that never answers), crash exits at once;
$FAKE_VLLM_IMAGE_LIMIT refuses prompts with more images (the preflight then stops the job). Every
step it answers names the model it serves (in the step's reasoning).

$FAKE_VLLM_RECORD names a JSON-lines file that says where and how each fake ran (`events()` reads
it): a `start` line (pid, parent, process group, argv, the SLURM job it runs in, the worker's pid),
a `chat` line per chat request (the model served and the model asked for) and a `stop` line when
SIGTERM stops it (whether its parent, the job, was still there to stop it). $FAKE_VLLM_WORKER=1
forks a worker that only sleeps, as vLLM forks its engine: it stays in the server's process group
(its argv is the server's, after `fake-vllm-worker`), so only a stop of the whole group ends it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from tests.llm.open_server import OpenServer, serving

ROOT = Path(__file__).resolve().parents[2]
WORKER = "fake-vllm-worker"  # in the worker's argv, so a test can find it
SLURM_VARS = ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_STEP_ID", "SLURMD_NODENAME")
_write_lock = threading.Lock()


def install(bin_dir: Path) -> Path:
    """An executable `vllm` in `bin_dir` that runs this module with the test's interpreter."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "vllm"
    script.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m tests.llm.fake_vllm "$@"\n')
    script.chmod(0o755)
    return script


def events(record: Path) -> list[dict[str, Any]]:
    """The lines $FAKE_VLLM_RECORD collected, in order."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines() if line.strip()]


def _note(event: str, **fields: Any) -> None:
    if record := os.environ.get("FAKE_VLLM_RECORD"):
        line = json.dumps({"event": event, "pid": os.getpid(), "time": time.time(), **fields}) + "\n"
        with _write_lock, open(record, "a") as out:  # one short append per line: whole under O_APPEND
            out.write(line)


@dataclass
class _Recorded(OpenServer):
    """The stub, with each chat request noted in $FAKE_VLLM_RECORD."""

    def chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        status, reply = super().chat(body)
        _note("chat", served=self.models[0], asked=body.get("model"), status=status)
        return status, reply


def main() -> None:
    parser = argparse.ArgumentParser(prog="vllm")
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("model")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args, flags = parser.parse_known_args()
    if pids := os.environ.get("FAKE_VLLM_PIDS"):
        with open(pids, "a") as out:
            out.write(f"{os.getpid()}\n")
    print(f"fake vllm: {args.model} on {args.host}:{args.port} {' '.join(flags)}", flush=True)
    mode = os.environ.get("FAKE_VLLM_MODE", "serve")
    worker = None
    if os.environ.get("FAKE_VLLM_WORKER") == "1" and mode != "crash":
        code = "import time; time.sleep(3600)"
        worker = subprocess.Popen(
            [sys.executable, "-c", code, WORKER, *sys.argv[1:]], stdin=subprocess.DEVNULL
        )
    parent = os.getppid()
    _note(
        "start",
        model=args.model,
        host=args.host,
        port=args.port,
        argv=sys.argv[1:],
        ppid=parent,
        pgid=os.getpgid(0),
        worker=worker.pid if worker else None,
        slurm={name: os.environ.get(name) for name in SLURM_VARS},
    )
    if mode == "crash":
        print("fake vllm: CUDA out of memory", flush=True)
        sys.exit(1)

    def stop(signum: int, frame: FrameType | None) -> None:
        if worker is not None:  # the group's SIGTERM ends it too; a SIGTERM to this pid alone does not
            with suppress(subprocess.TimeoutExpired):
                worker.wait(timeout=5)
        _note("stop", signal=signal.Signals(signum).name, parent_alive=os.getppid() == parent)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    if mode == "silent":
        while True:
            time.sleep(1)
    limit = os.environ.get("FAKE_VLLM_IMAGE_LIMIT")  # as if started without --limit-mm-per-prompt
    stub = _Recorded(
        "vllm",
        models=(args.model,),
        image_limit=int(limit) if limit else None,
        reasoning=f"{args.model} sees tumour on the left.",
    )
    with serving(stub, args.host, args.port):
        while True:
            time.sleep(1)


if __name__ == "__main__":
    main()
