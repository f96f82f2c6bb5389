"""giant.atomic.write_atomic, the one writer of the files a rerun reads back: a write that dies midway
leaves the previous file whole and no temporary file behind. The writers of such files (the sweep's
mlflow_sweep.json, the trajectory images) are checked here to go through it: a write cut after half
its bytes leaves nothing at the final path."""

from __future__ import annotations

import ast
import base64
import hashlib
import io
import os
from pathlib import Path
from typing import Any

import pytest

import giant.atomic
from giant.agent.images import ImageStore
from giant.atomic import write_atomic
from giant.core import EncodedImage
from giant.record import SWEEP_FILE
from giant.tracking.mlflow_logger import SweepInfo


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


class _HalfWritten:
    """A file whose first write puts half its bytes on disk and then fails, as a full disk or a kill
    mid-write would leave it."""

    def __init__(self, file: Any) -> None:
        self._file = file

    def write(self, data: bytes | str) -> int:
        self._file.write(data[: len(data) // 2])
        self._file.flush()
        raise OSError(28, "No space left on device")

    def __enter__(self) -> _HalfWritten:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


def _tear_writes(patch: pytest.MonkeyPatch) -> None:
    """Every file opened from here on (Path.write_text, Path.write_bytes and os.fdopen all open
    through io.open) is cut after half of its first write."""
    real_open = io.open
    patch.setattr(io, "open", lambda *args, **kwargs: _HalfWritten(real_open(*args, **kwargs)))


def _image() -> EncodedImage:
    data = bytes(range(256)) * 40
    return EncodedImage(
        data_b64=base64.b64encode(data).decode(), sha256=hashlib.sha256(data).hexdigest(), width=8, height=8
    )


def test_a_torn_sweep_file_is_never_left_for_the_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sweep = SweepInfo(tracking_uri="sqlite:///x.db", experiment_id="1", parent_run_id="abc")
    with monkeypatch.context() as patch, pytest.raises(OSError, match="No space left"):
        _tear_writes(patch)
        sweep.write(tmp_path / "sweep")
    assert not (tmp_path / "sweep" / SWEEP_FILE).exists()  # a job reads none rather than half of one
    assert list((tmp_path / "sweep").iterdir()) == []


def test_a_sweep_file_is_written_whole(tmp_path: Path) -> None:
    sweep = SweepInfo(tracking_uri="sqlite:///x.db", experiment_id="1", parent_run_id="abc")
    sweep.write(tmp_path / "sweep")
    assert SweepInfo.read(tmp_path / "sweep") == sweep
    assert [p.name for p in (tmp_path / "sweep").iterdir()] == [SWEEP_FILE]


def test_a_torn_trajectory_image_is_never_left_for_the_rerun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    image = _image()
    store = ImageStore(tmp_path)
    with monkeypatch.context() as patch, pytest.raises(OSError, match="No space left"):
        _tear_writes(patch)
        store.save(image)
    assert list(tmp_path.iterdir()) == []  # no partial <sha256>.jpg, no temporary
    name = store.save(image)  # the rerun writes it whole
    assert (tmp_path / name).read_bytes() == base64.b64decode(image.data_b64)


def test_a_torn_image_left_by_an_older_run_is_written_again(tmp_path: Path) -> None:
    """The image is named by its hash, but a file of that name is kept only at its full size."""
    image = _image()
    data = base64.b64decode(image.data_b64)
    torn = tmp_path / f"{image.sha256}.jpg"
    torn.write_bytes(data[: len(data) // 2])
    assert ImageStore(tmp_path).save(image) == torn.name
    assert torn.read_bytes() == data
