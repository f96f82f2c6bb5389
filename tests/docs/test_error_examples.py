"""The docs' error examples are what the code prints today (issue 42: docs/running.md's provider list
lacked gemini): each `$ python scripts/run_eval.py ...` in a docs text block is run, and its one-line
errors compared with the lines the page shows under it. Examples whose lines name a folder of the
writer's machine (/home/me/...) are left out."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMAND = re.compile(r"^\$ python (scripts/run_eval\.py .*)\n((?:run_eval: .*\n)+)", re.M)


def examples() -> list[tuple[str, str, list[str]]]:
    found = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        for command, lines in COMMAND.findall(page.read_text()):
            if "/home/me" not in lines:
                found.append((page.name, command, lines.splitlines()))
    return found


def test_the_docs_show_error_examples() -> None:
    assert len(examples()) >= 4


@pytest.mark.subprocess_job
@pytest.mark.slow
@pytest.mark.parametrize(("page", "command", "lines"), examples(), ids=lambda value: str(value)[:40])
def test_an_error_example_prints_what_the_page_shows(
    page: str, command: str, lines: list[str], tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "GIANT_", "HYDRA_"))}
    env.update(GIANT_CACHE_DIR=str(tmp_path / "cache"), GIANT_OUTPUT_DIR=str(tmp_path / "out"))
    env["GIANT_MULTIRUN_DIR"] = str(tmp_path / "multirun")
    script, *args = shlex.split(command)
    proc = subprocess.run(
        [sys.executable, str(ROOT / script), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == lines, page
