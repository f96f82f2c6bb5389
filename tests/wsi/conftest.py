"""Small generated slides shared by the slide-layer tests (generated once per session: ~1 s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from giant.core import Box
from giant.wsi.synthetic import Finding, write_synthetic_slide

FINDING = Finding(box=Box(x=1200, y=900, w=120, h=120), shape="cross")


@pytest.fixture(scope="session")
def svs_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4096 x 3072, levels 4096 / 1024 / 256 (downsamples 1, 4, 16), one cross finding."""
    path = tmp_path_factory.mktemp("slides") / "synthetic.svs"
    return write_synthetic_slide(path, 4096, 3072, seed=7, findings=[FINDING], label=True)
