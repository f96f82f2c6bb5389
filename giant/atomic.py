"""Whole-file writes for every file a rerun reads back (ledger entries, resume records,
results.jsonl rewrites, summary.json, trajectory.json, resolved_config.json): a kill or a full
disk mid-write leaves the previous file or none, never a truncated one that the rerun would trip
over. It imports nothing of giant's, so any module can use it without an import cycle."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> None:
    """Write to a temporary file beside `path`, fsync it, then rename it over `path`: the rename is
    atomic on one file system, and the fsync keeps it from outliving the data on power loss."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
