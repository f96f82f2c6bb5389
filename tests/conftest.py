"""Fixtures shared by every test package."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser import browser  # noqa: F401  (the headless Chromium fixture, for every package)

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared beside the project: skipped on a user's fresh clone, required in CI."""
    if not SHARED.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{SHARED} is missing, but CI is set: CI must run with ../shared beside the project")
        pytest.skip(f"{SHARED} is absent (a fresh clone without the shared material)")
    return SHARED


@pytest.fixture(scope="session")
def openslide_fixtures(shared_dir: Path) -> Path:
    return shared_dir / "fixtures" / "openslide"


@pytest.fixture(scope="session")
def multipathqa_csv(shared_dir: Path) -> Path:
    return shared_dir / "data" / "multipathqa" / "MultiPathQA.csv"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`make test` runs two workers), the SLURM tests share one private cluster, so
    they go to one worker together (`--dist loadgroup`); without xdist the mark does nothing."""
    for item in items:
        if "tests/slurm/" in item.nodeid or item.nodeid.startswith("slurm/"):
            item.add_marker(pytest.mark.xdist_group("slurm"))
