"""Fixtures of the tool tests: a small real slide, an item, and whether PyTorch is required here."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from giant.core import Item
from giant.wsi.synthetic import write_synthetic_slide

WIDTH, HEIGHT = 6000, 4000
HAVE_TORCH = importlib.util.find_spec("torch") is not None
TORCH_HINT = "needs PyTorch (pip install -e '.[conch]'; CI installs torch==2.13.0 first)"


def needs_torch() -> None:
    """Skip without PyTorch, except under CI, where a missing install must fail loudly."""
    if HAVE_TORCH:
        return
    if os.environ.get("CI"):
        pytest.fail(TORCH_HINT)
    pytest.skip(TORCH_HINT)


@pytest.fixture(scope="module")
def slide_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_synthetic_slide(tmp_path_factory.mktemp("slide") / "slide.svs", WIDTH, HEIGHT, seed=5)


@pytest.fixture(scope="module")
def item() -> Item:
    return Item(
        benchmark="tcga_slidebench",
        benchmark_id="3",
        image_path="slide.svs",
        prompt='Which tissue is this?\n1. a\n2. b\n3. c\n4. d\nAnswer as {"answer": N}.',
        options=("a", "b", "c", "d"),
        truth=2,
        metric="accuracy",
    )
