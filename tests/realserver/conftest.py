"""One real `transformers serve` with the tiny VLM for the whole session (starting one costs ~15 s
of CPU on two cores): every real-server test shares it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from giant.llm.serve import Server
from tests.realserver.served import transformers_cli, transformers_serve
from tests.realserver.tiny_vlm import build_tiny_vlm


@pytest.fixture(scope="session")
def tiny_vlm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    transformers_cli()  # skip (or fail in CI) before building anything
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny-vlm") / "tiny-llava")


@pytest.fixture(scope="session")
def tserve(tiny_vlm: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with transformers_serve(tiny_vlm, tmp_path_factory.mktemp("tserve")) as server:
        yield server
