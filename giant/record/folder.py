"""A job folder's JSON files other than results.jsonl: the summary, the resolved config, each
trajectory and the dry-run report. Each is written whole and atomically (giant.atomic), because a
rerun, a re-score or a report reads it back and a half-written file must never be what it finds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from giant.atomic import write_atomic
from giant.record.layout import TRAJECTORY_FILE, JobLayout
from giant.record.summary import Summary
from giant.record.trajectory import Trajectory
from giant.secrets import redact_urls


def _write_json(path: Path, text: str) -> Path:
    write_atomic(path, (text + "\n").encode())
    return path


def write_summary(out_dir: Path, summary: Summary) -> Path:
    """summary.json; a URL in a reason (`cannot reach provider.base_url=...`) without its credentials."""
    return _write_json(JobLayout(out_dir).summary, redact_urls(summary.model_dump_json(indent=2)))


def read_summary(out_dir: Path) -> Summary:
    """Raises OSError when the job wrote none, pydantic's ValidationError when it is not a summary."""
    return Summary.model_validate_json(JobLayout(out_dir).summary.read_text(encoding="utf-8"))


def write_resolved_config(out_dir: Path, record: dict[str, Any]) -> Path:
    """The settings' record (giant.config.RunSettings.record): what a re-score and a comparison read."""
    return _write_json(JobLayout(out_dir).resolved_config, json.dumps(record, indent=2))


def read_resolved_config(out_dir: Path) -> dict[str, Any]:
    """Raises OSError when missing, ValueError when it is not JSON."""
    data = json.loads(JobLayout(out_dir).resolved_config.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{JobLayout(out_dir).resolved_config}: not a settings record")
    return data


def write_dry_run(out_dir: Path, report: BaseModel) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    return _write_json(JobLayout(out_dir).dry_run, report.model_dump_json(indent=2))


def has_trajectory(folder: Path) -> bool:
    return (folder / TRAJECTORY_FILE).is_file()


def write_trajectory(folder: Path, trajectory: Trajectory) -> Path:
    path = folder / TRAJECTORY_FILE
    write_atomic(path, trajectory.model_dump_json(indent=2).encode())
    return path


def read_trajectory(folder: Path) -> Trajectory:
    """Raises OSError when the folder has none, pydantic's ValidationError when it is not one."""
    return Trajectory.model_validate_json((folder / TRAJECTORY_FILE).read_text(encoding="utf-8"))
