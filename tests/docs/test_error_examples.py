"""The docs' error examples are what the code prints today (issue 42: docs/running.md's provider list
lacked gemini): each `$ python scripts/run_eval.py ...` in a docs text block is run, and its one-line
errors compared with the lines the page shows under it. Examples whose lines name a folder of the
writer's machine (/home/me/...) are left out."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.helpers.cli import ROOT, Env, clean_env, run_script

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


def _sweep(example: tuple[str, str, list[str]]) -> bool:
    return "-m" in shlex.split(example[1])


@pytest.mark.parametrize(
    ("page", "command", "lines"),
    [e for e in examples() if not _sweep(e)],
    ids=lambda value: str(value)[:40],
)
def test_an_error_example_is_the_one_line_the_job_ends_with(
    page: str, command: str, lines: list[str], tmp_path: Path
) -> None:
    """A single run's example, in-process (giant.evaluate): the ConfigError the command line prints as
    `run_eval: <message>` with exit 2 (the process itself: the sweep's example below)."""
    _, *args = shlex.split(command)
    env = clean_env(GIANT_CACHE_DIR=str(tmp_path / "cache"), GIANT_OUTPUT_DIR=str(tmp_path / "out"))
    end = Env(tmp_path, env).ended(tmp_path / "job", *args)
    assert end.code == 2, end
    assert [end.line] == lines, page


@pytest.mark.subprocess_job
@pytest.mark.slow
@pytest.mark.parametrize(
    ("page", "command", "lines"), [e for e in examples() if _sweep(e)], ids=lambda value: str(value)[:40]
)
def test_an_error_example_prints_what_the_page_shows(
    page: str, command: str, lines: list[str], tmp_path: Path
) -> None:
    env = clean_env(
        GIANT_CACHE_DIR=str(tmp_path / "cache"),
        GIANT_OUTPUT_DIR=str(tmp_path / "out"),
        GIANT_MULTIRUN_DIR=str(tmp_path / "multirun"),
    )
    script, *args = shlex.split(command)
    proc = run_script(ROOT / script, *args, cwd=tmp_path, env=env)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == lines, page
