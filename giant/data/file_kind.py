"""What stands at a path that should be a file: a directory or a FIFO given as a slide or a task file is
said to be one, not reported as "no such file" (and a FIFO is never opened: reading it would wait for
a writer forever)."""

from __future__ import annotations

import stat
from pathlib import Path

NAME_MAX = 255  # bytes in one file name on Linux, macOS and Windows file systems
PATH_MAX = 4096  # bytes in a whole path on Linux


def not_a_file(path: Path) -> str | None:
    """None for a regular file (or a link to one); else what is there, in a few words."""
    if (bad := bad_path(str(path))) is not None:
        return bad
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "no such file"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory, not a file"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe), not a file"
    if stat.S_ISSOCK(mode):
        return "a socket, not a file"
    return "a device, not a file"


def bad_path(path: str) -> str | None:
    """Why no file system can hold `path` (a NUL character, a name over NAME_MAX bytes, a path over
    PATH_MAX bytes); None when it could."""
    if "\0" in path:
        return "holds a NUL character (\\0), which no file name can; remove it"
    longest = max((len(part.encode("utf-8", "surrogateescape")) for part in path.split("/")), default=0)
    if longest > NAME_MAX:
        return f"has a file name of {longest:,} bytes; file systems allow {NAME_MAX}"
    size = len(path.encode("utf-8", "surrogateescape"))
    if size > PATH_MAX:
        return f"is {size:,} bytes long; file systems allow {PATH_MAX}"
    return None


def shown(path: str, limit: int = 60) -> str:
    """A path quoted for a message line, cut to `limit` characters (a 5,000-byte name is not shown whole)."""
    return repr(path) if len(path) <= limit else f"{path[:limit]!r}..."
