"""giant.atomic.write_atomic, the one writer of the files a rerun reads back: a write that dies midway
leaves the previous file whole and no temporary file behind."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

import giant.atomic
from giant.atomic import write_atomic


def test_a_write_replaces_the_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "new" / "summary.json"  # the folder is made
    write_atomic(target, b"first")
    write_atomic(target, b"second")
    assert target.read_bytes() == b"second"
    assert [p.name for p in target.parent.iterdir()] == ["summary.json"]


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "trajectory.json"
    target.write_bytes(b"old")

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["trajectory.json"]


def test_it_imports_nothing_of_giant() -> None:
    """At the bottom of the import graph: the ledger, the runner and the job all import it."""
    tree = ast.parse(Path(giant.atomic.__file__).read_text(encoding="utf-8"))
    imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    imported += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert not [name for name in imported if name.split(".")[0] == "giant"]
