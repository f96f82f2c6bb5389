"""A stand-in for `vllm serve MODEL --host H --port P [flags]`: the loopback vLLM stub on that port.

Tests put it on PATH as `vllm` (`install()`), so giant.llm.serve starts it as it would start vLLM.
It writes its pid to $FAKE_VLLM_PIDS (one line per start) so a test can check it is gone after the
job; $FAKE_VLLM_MODE=silent never opens the port (a server that never answers), crash exits at once;
$FAKE_VLLM_IMAGE_LIMIT refuses prompts with more images (the preflight then stops the job).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from tests.llm.open_server import OpenServer, serving

ROOT = Path(__file__).resolve().parents[2]


def install(bin_dir: Path) -> Path:
    """An executable `vllm` in `bin_dir` that runs this module with the test's interpreter."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "vllm"
    script.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m tests.llm.fake_vllm "$@"\n')
    script.chmod(0o755)
    return script


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
    if mode == "crash":
        print("fake vllm: CUDA out of memory", flush=True)
        sys.exit(1)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if mode == "silent":
        while True:
            time.sleep(1)
    limit = os.environ.get("FAKE_VLLM_IMAGE_LIMIT")  # as if started without --limit-mm-per-prompt
    stub = OpenServer("vllm", models=(args.model,), image_limit=int(limit) if limit else None)
    with serving(stub, args.host, args.port):
        while True:
            time.sleep(1)


if __name__ == "__main__":
    main()
