"""What a job is told besides its settings: where it writes, which sweep it belongs to and the command
line that asked for it. Plain values, so a job (giant.job, giant.rescore_job, giant.fetch_job) runs the
same under the command line, which reads them from Hydra (giant.cli.context), and under a library call
(giant.evaluate), which passes them itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class JobContext:
    """`output_dir`: the job's folder. `overrides`: the overrides that made the job (the MLflow tag
    giant.overrides). `sweep_dir`: the sweep's folder for a job of a sweep (its MLflow parent run is
    read from there), None for a single run."""

    output_dir: Path
    overrides: tuple[str, ...] = ()
    sweep_dir: Path | None = None
