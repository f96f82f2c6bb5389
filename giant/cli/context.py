"""The running Hydra job's context as plain values (giant.context.JobContext): the one place a job's
folder, sweep and overrides are read from Hydra's globals, so the jobs themselves never read them."""

from __future__ import annotations

from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode

from giant.context import JobContext


def hydra_context() -> JobContext:
    """The context of the job Hydra is running now (single run or job of a sweep)."""
    hydra_cfg = HydraConfig.get()
    sweep = Path(hydra_cfg.sweep.dir) if hydra_cfg.mode == RunMode.MULTIRUN else None
    return JobContext(
        output_dir=Path(hydra_cfg.runtime.output_dir),
        overrides=tuple(hydra_cfg.overrides.task),
        sweep_dir=sweep,
    )
