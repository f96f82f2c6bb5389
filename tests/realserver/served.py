"""A real `transformers serve` on a loopback port, started the way `server=transformers` starts it.

The fixture's settings are conf/server/transformers.yaml's own (giant.llm.serve.served starts it,
waits for its readiness path and stops its process group), with the executable beside the test's
interpreter and a port of its own. No network: HF_HUB_OFFLINE=1 and a Hugging Face home in the test's
tmp folder that does not exist yet, as on a fresh machine. The server's log (its access lines count
the requests it got) is kept beside it.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
import yaml

from giant.llm.serve import Server, ServerSettings, served

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf" / "server" / "transformers.yaml"


def transformers_cli() -> Path:
    """The `transformers` executable of this interpreter's environment; the serve extra is missing
    otherwise: a skip on a developer's machine, a failure in CI."""
    found = Path(sys.executable).parent / "transformers"
    if not found.exists():
        found = Path(shutil.which("transformers") or found)
    try:
        import fastapi  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        found = Path("/nonexistent")
    if not found.exists():
        message = "transformers serve is not installed: pip install -e '.[serve]' (make install-serve)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def offline_env(home: Path) -> dict[str, str]:
    """What the server and the runs pointed at it get: no Hub, a fresh Hugging Face home."""
    return {"HF_HUB_OFFLINE": "1", "HF_HOME": str(home / "hf-home"), "TRANSFORMERS_VERBOSITY": "warning"}


def server_settings(cli: Path) -> ServerSettings:
    data = yaml.safe_load(CONF.read_text())["server"]
    data["command"] = [str(cli), *data["command"][1:]]
    return ServerSettings.from_data(data).on_a_port()


@contextmanager
def transformers_serve(model_dir: Path, work: Path) -> Iterator[Server]:
    """`transformers serve model_dir` answering on 127.0.0.1, stopped when the block exits."""
    settings = server_settings(transformers_cli())
    with ExitStack() as stack:
        with pytest.MonkeyPatch.context() as patch:  # the server's environment only, not the tests'
            for name, value in offline_env(work).items():
                patch.setenv(name, value)
            server = stack.enter_context(served(settings, str(model_dir), work))
        yield server


def requests_seen(server: Server) -> tuple[int, int]:
    """(chat requests, model-list requests) the server has answered so far, from its access log."""
    log = server.log_path.read_text(errors="replace")
    return log.count('"POST /v1/chat/completions HTTP/1.1"'), log.count('"GET /v1/models HTTP/1.1"')
