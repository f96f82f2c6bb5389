"""What the terminal shows while a script runs: the progress bar, giant's own lines, every warning and
the final table; not a line per HTTP request.

Hydra's job logging (hydra/job_logging/default.yaml) sets the root logger to INFO with a console
handler and a file handler (`<job folder>/<job name>.log`), so every library's INFO notes reached the
terminal: one httpx2 `HTTP Request: POST ...` line per provider call, pushing the progress bar up the
screen. MLflow logs through a stderr handler of its own (its store-creation notes, for one).

The `QuietConsole` callback (first in `hydra.callbacks` of conf/config.yaml, also in ask.yaml and
rescore.yaml) puts a filter on the root logger's console handlers only: below WARNING they pass the
records of giant and of Hydra itself (its launcher's one line per sweep job), nothing else. The file
handler is left alone, so the job's log file still holds every library's INFO notes. MLflow's own
handler is held at WARNING through `MLFLOW_LOGGING_LEVEL` (read when mlflow is first imported),
unless that variable is already set.

`verbose=true` (a run key of conf/config.yaml) lets every record through to the console, at the
root's level (INFO); Hydra's own `hydra.verbose=true` (DEBUG everywhere) does the same, and
`hydra.verbose=httpx2` (or a list of logger names) lets those loggers through, at DEBUG.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from giant.errors import exit_with

# Loggers whose INFO records stay on the console: giant's, a script's own, Hydra's and its plugins'.
OWN_LOGGERS = ("giant", "__main__", "hydra", "hydra_plugins")
MLFLOW_LEVEL = "MLFLOW_LOGGING_LEVEL"  # MLflow's own setting for its loggers' level (default INFO)


class LibraryNotes(logging.Filter):
    """On a console handler: drops the records below WARNING of every logger outside OWN_LOGGERS and
    `loud` (loggers named by `hydra.verbose`)."""

    def __init__(self, loud: Iterable[str] = ()) -> None:
        super().__init__()
        self.shown = (*OWN_LOGGERS, *loud)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        name = record.name
        return any(name == shown or name.startswith(f"{shown}.") for shown in self.shown)


class QuietConsole(Callback):
    """Quiets the console as the run, the sweep and each job start: each job's logging is configured
    afresh by Hydra (new handlers), so the filter is put on again at every job start."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        quiet_console(config)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        quiet_console(config)

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        quiet_console(config)


def quiet_console(config: DictConfig) -> None:
    """Filter the root logger's console handlers as `verbose` and `hydra.verbose` ask."""
    everything, loud = _loudness(config)
    for handler in logging.getLogger().handlers:
        for old in [f for f in handler.filters if isinstance(f, LibraryNotes)]:
            handler.removeFilter(old)
        if not everything and _is_console(handler):
            handler.addFilter(LibraryNotes(loud))
    if not everything and not any(name.split(".")[0] == "mlflow" for name in loud):
        _quiet_mlflow()


def _loudness(config: DictConfig) -> tuple[bool, list[str]]:
    """(every logger on the console, the loggers named by hydra.verbose). A `verbose` that is not a
    boolean is one line and exit 2, like any bad value."""
    verbose = config.get("verbose", False)
    if not isinstance(verbose, bool):
        name = str(OmegaConf.select(config, "hydra.job.name") or "run_eval")
        exit_with(name, f"verbose={verbose}: give true or false (or hydra.verbose=LOGGER for one library)")
    hydra_verbose = OmegaConf.select(config, "hydra.verbose", default=False)
    if isinstance(hydra_verbose, bool):
        return verbose or hydra_verbose, []
    if isinstance(hydra_verbose, str):
        return verbose, [hydra_verbose]
    return verbose, [str(name) for name in hydra_verbose]


def _is_console(handler: logging.Handler) -> bool:
    return isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler)


def _quiet_mlflow() -> None:
    """MLflow's loggers print through their own handler (they do not reach the root's): at WARNING,
    unless MLFLOW_LOGGING_LEVEL says otherwise. Set before mlflow's import, the variable is what
    MLflow reads; after it, the level is set directly (MLflow is imported only where it is used)."""
    if MLFLOW_LEVEL in os.environ:
        return
    os.environ[MLFLOW_LEVEL] = "WARNING"  # also what joblib and submitit job processes inherit
    if "mlflow" in sys.modules:
        logging.getLogger("mlflow").setLevel(logging.WARNING)


__all__ = ["LibraryNotes", "QuietConsole", "quiet_console"]
