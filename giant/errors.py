"""The errors that end a run on purpose, and the exit codes a script can trust.

A `ConfigError` is bad user input found before any item starts; a `RunStopped` is a run that started
and could not measure the model (a refused key, an unknown model, a used-up quota, a server that keeps
failing) or finished with item-runs left unmeasured (a budget stop, missing slides, a server that
kept failing, a bug). Either way the CLI prints one line and exits with the code below, never a
traceback, and a rerun after the fix resumes.
"""

from __future__ import annotations

import sys
from typing import NoReturn

EXIT_OK = 0  # the run is complete: every item-run was measured
EXIT_FAILED = 1  # a one-off command (scripts/ask.py) ran and failed: its slide cannot be used, or no answer
EXIT_CONFIG = 2  # a bad command line, setting or input (no slide found, no key, unwritable folder)
EXIT_SETUP = 3  # stopped mid-run: the provider refused the setup, or the circuit breaker tripped
EXIT_INCOMPLETE = 4  # ran to the end with item-runs left unmeasured (budget stop, missing slides, faults)
EXIT_UNTRACKED = 6  # complete on disk, but the tracking server did not take the job's end: rerun to log it
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, what a shell reports)
EXIT_TERMINATED = 143  # SIGTERM or a SLURM time limit (128 + SIGTERM)


class ConfigError(ValueError):
    """Bad configuration or input detected before any item starts."""


class RunStopped(Exception):
    """A run that is not complete, raised after its records are written and its MLflow run closed:
    `str(err)` is the one line for the user (what happened, what to fix), `code` the exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def exit_with(prog: str, message: str, code: int = EXIT_CONFIG) -> NoReturn:
    """One line on stderr, prefixed with the script's name, then exit: what every script does with a
    ConfigError instead of letting a traceback reach the user."""
    print(f"{prog}: {message}", file=sys.stderr)
    sys.exit(code)
