"""Every line a job prints also goes to its log file (`<job folder>/<job name>.log`, Hydra's), so the
folder of a SLURM job, or of any job whose terminal is gone, says how it ended.

Hydra's file handler records logging calls only; the summary line, the `resuming run key` line, the
one-line errors (`run_eval: ...`) and the warnings giant prints reach stdout and stderr. The `JobLog`
callback (conf/config.yaml) copies both streams into the log file from the job's start to its end:
whole lines, and of a line redrawn in place (the progress bar's `\\r` updates) only its last state.

Both streams and the log file's records pass through giant.secrets.redact on the way: credentials in
a URL (`provider.base_url=https://user:pass@...`) and the values of secret environment variables are
*** on the terminal and in the file. The files Hydra wrote before the job started (`.hydra/config.yaml`,
`hydra.yaml`, `overrides.yaml`, a sweep's `multirun.yaml`) get the same redaction, and a key pasted
into `provider.api_key_env` (refused by giant.config) is *** there too.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import IO, Any

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from giant.atomic import write_atomic
from giant.secrets import looks_like_key, redact, secret_values


class Tee:
    """A text stream that writes through to `stream` and copies each finished line to `log`."""

    def __init__(self, stream: IO[str], log: IO[str], secrets: list[str] | None = None) -> None:
        self.stream = stream
        self.log = log
        self.secrets = secret_values() if secrets is None else secrets
        self._line = ""

    def write(self, text: str) -> int:
        self.stream.write(redact(text, self.secrets))
        self._line += text
        if "\n" in self._line:
            *done, self._line = self._line.split("\n")
            lines = "".join(line.rsplit("\r", 1)[-1] + "\n" for line in done)
            self.log.write(redact(lines, self.secrets))
            self.log.flush()
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ... of the real stream
        return getattr(self.stream, name)


class Redacting(logging.Filter):
    """On a handler: a record's message without URL credentials nor secret values (giant.secrets)."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message, self.secrets)
        if clean != message:
            record.msg, record.args = clean, None
        return True


# The streams a running job replaced and its open log file. Kept outside the callback: submitit pickles
# Hydra's callbacks to requeue a job, and an open file cannot be pickled.
_active: tuple[Any, Any, IO[str]] | None = None


class JobLog(Callback):
    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        global _active
        runtime = HydraConfig.get()
        redact_hydra_files(config, runtime)
        path = Path(runtime.runtime.output_dir) / f"{runtime.job.name}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        log = path.open("a", encoding="utf-8")
        _active = (sys.stdout, sys.stderr, log)
        secrets = secret_values()
        sys.stdout = Tee(sys.stdout, log, secrets)
        sys.stderr = Tee(sys.stderr, log, secrets)
        for handler in logging.getLogger().handlers:  # Hydra's console and file handlers, new per job
            if not any(isinstance(f, Redacting) for f in handler.filters):
                handler.addFilter(Redacting(secrets))

    def on_job_end(self, config: DictConfig, job_return: Any = None, **kwargs: Any) -> None:
        global _active
        if _active is None:
            return
        sys.stdout, sys.stderr, log = _active
        _active = None
        log.close()


def redact_hydra_files(config: DictConfig, runtime: Any) -> list[Path]:
    """Hydra's copies of the config in the job folder (and the sweep's `multirun.yaml`), rewritten
    whole without credentials (giant.secrets.redact); returns the files that changed."""
    secrets = secret_values()
    pasted = OmegaConf.select(config, "provider.api_key_env", default=None)
    if isinstance(pasted, str) and pasted and looks_like_key(pasted):
        secrets = [pasted, *secrets]
    folders = []
    if runtime.output_subdir is not None:
        folders.append(Path(runtime.runtime.output_dir) / str(runtime.output_subdir))
    files = [path for folder in folders for path in sorted(folder.glob("*.yaml"))]
    if runtime.mode == RunMode.MULTIRUN:
        files.append(Path(runtime.sweep.dir) / "multirun.yaml")
    changed = []
    for path in files:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        clean = redact(text, secrets)
        if clean != text:
            write_atomic(path, clean.encode())
            changed.append(path)
    return changed
