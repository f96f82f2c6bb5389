"""Fixtures of the tool tests: the agent tests' slide and item, and whether PyTorch is required here."""

from __future__ import annotations

import importlib.util
import os

import pytest

from tests.agent.conftest import HEIGHT, WIDTH, item, slide_path  # noqa: F401  (fixtures shared)

HAVE_TORCH = importlib.util.find_spec("torch") is not None
TORCH_HINT = "needs PyTorch (pip install -e '.[conch]'; CI installs torch==2.13.0 first)"


def needs_torch() -> None:
    """Skip without PyTorch, except under CI, where a missing install must fail loudly."""
    if HAVE_TORCH:
        return
    if os.environ.get("CI"):
        pytest.fail(TORCH_HINT)
    pytest.skip(TORCH_HINT)
