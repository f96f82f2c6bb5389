"""A Hydra callback the CLI tests add to a sweep (`+hydra.callbacks.pause._target_=...`) to hold it
between its first two jobs: a signal sent while it waits lands in Hydra's own code, after job 0 has
finished and before job 1 starts, on any machine however slow."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig


class PauseAfterFirstJob(Callback):
    def __init__(self, marker: str, seconds: float = 60.0) -> None:
        self.marker = Path(marker)
        self.seconds = seconds

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        """Job 0 has ended (its MLflow run closed): say so through the marker file, then wait."""
        if config.hydra.job.num == 0:
            self.marker.write_text("job 0 ended\n")
            time.sleep(self.seconds)
