"""Fixtures shared by every test package."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser import browser, chromium  # noqa: F401  (the headless Chromium fixtures, for every package)
from tests.helpers.store import demo_store, empty_store_db  # noqa: F401  (a read-only demo store; a template)
from tests.helpers.ui import demo_ui  # noqa: F401  (make ui over it)

# pytester: tests/test_suite_shape.py runs a small suite inside the suite; the guard: a test that starts
# a job script in a subprocess is marked subprocess_job (tests/helpers/subprocess_guard.py).
pytest_plugins = ["pytester", "tests.helpers.subprocess_guard"]

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


@pytest.fixture(scope="session", autouse=True)
def conf_prepared() -> None:
    """What conf/ needs besides its files (`${giant_root:}`, the `tools: all` option), registered once
    as the command line does before Hydra runs (giant.cli.checks): importing giant registers nothing,
    and tests compose conf/ with Hydra's own `initialize_config_dir` too."""
    from giant.confdir import prepare

    prepare()


@pytest.fixture
def hydra_init() -> Iterator[None]:
    """conf/ as a running Hydra app holds it, for `hydra.compose("config", overrides=[...])` in a test
    (giant.confdir.compose composes without one). What conf/ needs besides its files is registered
    first (giant.confdir.prepare), so no test depends on another having imported giant.config. One
    test at a time: a test that initializes Hydra itself (check_override_keys does) can follow."""
    from hydra import initialize_config_dir

    from giant.confdir import CONF_DIR, prepare

    prepare()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        yield


@pytest.hookimpl(trylast=True)  # after pytest-xdist's own naming, which this completes
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`make test` runs two workers), the SLURM tests share one private cluster, so
    they go to one worker together (`--dist loadgroup`); without xdist the mark does nothing. So do the
    tests of the session's demo store and its UI, built once on that worker."""
    if not config.pluginmanager.hasplugin("xdist"):  # `-p no:xdist`: no such mark to give
        return
    for item in items:
        if "tests/slurm/" in item.nodeid or item.nodeid.startswith("slurm/"):
            item.add_marker(pytest.mark.xdist_group("slurm"))
        elif {"demo_store", "demo_ui"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("demo_store"))
    if getattr(config.option, "loadgroup", False):  # an xdist worker under --dist loadgroup
        for item in items:
            _name_group(item)


def _name_group(item: pytest.Item) -> None:
    """pytest-xdist (3.8) sends a group to one worker by the `<nodeid>@<group>` it names each grouped
    test, set as item._nodeid, which pytest 9 no longer reads (the id is item._id): without this,
    --dist loadgroup groups nothing."""
    groups = {
        str(m.args[0] if m.args else m.kwargs.get("name", "default"))
        for m in item.iter_markers("xdist_group")
    }
    if groups and "@" not in item.nodeid and hasattr(item, "_id"):
        item._id = type(item._id).parse(f"{item.nodeid}@{'_'.join(sorted(groups))}")
