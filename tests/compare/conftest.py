"""The session's demo store (tests/helpers/store.py) copied once for the comparison tests, which log
comparisons into it and move its folders: its demo_shapes jobs at T=1 and T=3, one sweep's."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.store import ROOT, DemoStore

COMPARE = ROOT / "scripts" / "compare.py"


@dataclass
class Sweep:
    store: DemoStore
    folder: Path
    sweep_id: str
    jobs: list[Path]  # T=1 then T=3
    run_ids: list[str]


@pytest.fixture(scope="session")
def sweep(demo_store: DemoStore, tmp_path_factory: pytest.TempPathFactory) -> Sweep:
    store = demo_store.copy(tmp_path_factory.mktemp("compare") / "store")
    runs = store.jobs()
    jobs = [Path(run.data.tags["output_dir"]) for run in runs]
    return Sweep(store, store.sweep_dir, store.sweep_id, jobs, [run.info.run_id for run in runs])


def run_compare(sweep: Sweep, out: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return sweep.store.run(COMPARE, *args, "--out", str(out), "--tracking-uri", sweep.store.uri, check=check)


@dataclass
class Compared:
    out: Path
    proc: subprocess.CompletedProcess[str]


@pytest.fixture(scope="session")
def compared(sweep: Sweep, tmp_path_factory: pytest.TempPathFactory) -> Compared:
    """The sweep's two job folders compared once (logged to MLflow), for the CLI and browser tests."""
    out = tmp_path_factory.mktemp("compared") / "cmp"
    return Compared(out, run_compare(sweep, out, *map(str, sweep.jobs)))
