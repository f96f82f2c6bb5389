"""The one error type for bad user input (config, paths, keys): its message is one line that names
the thing and the fix, and the CLI prints it without a traceback."""

from __future__ import annotations

import sys
from typing import NoReturn

EXIT_CONFIG = 2  # every entrypoint's exit code for a bad command line, setting or input


class ConfigError(ValueError):
    """Bad configuration or input detected before any item starts."""


def exit_with(prog: str, message: str, code: int = EXIT_CONFIG) -> NoReturn:
    """One line on stderr, prefixed with the script's name, then exit: what every script does with a
    ConfigError instead of letting a traceback reach the user."""
    print(f"{prog}: {message}", file=sys.stderr)
    sys.exit(code)
