"""Every line a job prints also goes to its log file (`<job folder>/<job name>.log`, Hydra's), so the
folder of a SLURM job, or of any job whose terminal is gone, says how it ended.

Hydra's file handler records logging calls only; the summary line, the `resuming run key` line, the
one-line errors (`run_eval: ...`) and the warnings giant prints reach stdout and stderr. The `JobLog`
callback (conf/config.yaml) copies both streams into the log file from the job's start to its end:
whole lines, and of a line redrawn in place (the progress bar's `\\r` updates) only its last state.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO, Any

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import DictConfig


class Tee:
    """A text stream that writes through to `stream` and copies each finished line to `log`."""

    def __init__(self, stream: IO[str], log: IO[str]) -> None:
        self.stream = stream
        self.log = log
        self._line = ""

    def write(self, text: str) -> int:
        written = self.stream.write(text)
        self._line += text
        if "\n" in self._line:
            *done, self._line = self._line.split("\n")
            self.log.write("".join(line.rsplit("\r", 1)[-1] + "\n" for line in done))
            self.log.flush()
        return written

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ... of the real stream
        return getattr(self.stream, name)


# The streams a running job replaced and its open log file. Kept outside the callback: submitit pickles
# Hydra's callbacks to requeue a job, and an open file cannot be pickled.
_active: tuple[Any, Any, IO[str]] | None = None


class JobLog(Callback):
    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        global _active
        runtime = HydraConfig.get()
        path = Path(runtime.runtime.output_dir) / f"{runtime.job.name}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        log = path.open("a", encoding="utf-8")
        _active = (sys.stdout, sys.stderr, log)
        sys.stdout = Tee(sys.stdout, log)
        sys.stderr = Tee(sys.stderr, log)

    def on_job_end(self, config: DictConfig, job_return: Any = None, **kwargs: Any) -> None:
        global _active
        if _active is None:
            return
        sys.stdout, sys.stderr, log = _active
        _active = None
        log.close()
