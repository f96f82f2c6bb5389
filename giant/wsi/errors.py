"""The one error tree for a slide that cannot be used, shaped like openslide-python's
`OpenSlideError` family: a base class to catch everywhere a slide failure is only reported, and one
subclass per decision a caller makes.

A run treats the failures differently, so they are distinct classes rather than message texts:
a missing slide is planned for (skip_missing drops it, a rerun after the copy retries it, the
circuit breaker ignores it), while a path that leaves the WSI root or a file that cannot be decoded
is a slide problem the user must fix. Every message names the slide and the cause on one line, so
a catch site can print or record it as is.

The module imports nothing heavy (no OpenSlide, no tifffile): the slide locator and the CLI import
it without loading the readers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["SlideError", "SlideMissing", "SlidePathInvalid", "SlideUnreadable"]


class SlideError(Exception):
    """Any slide that cannot be used: catch this where the failure is only reported or recorded.

    `slide` names the slide (an item key, or the file's path) so a catch site can say which one
    failed without parsing the message. The keyword defaults keep the exception picklable
    (Exception.__reduce__ rebuilds it from the message alone).
    """

    def __init__(self, message: str, *, slide: str | Path = "") -> None:
        super().__init__(message)
        self.slide = str(slide)


class SlideMissing(SlideError):
    """No file at any path tried: the slide was never fetched, or the WSI root is wrong.

    `tried` lists the paths looked at, for the user to compare with where the slide really is.
    """

    def __init__(self, message: str, *, slide: str | Path = "", tried: Sequence[Path] = ()) -> None:
        super().__init__(message, slide=slide)
        self.tried: tuple[Path, ...] = tuple(tried)


class SlidePathInvalid(SlideError):
    """A slide path from untrusted input (the CSV) that is empty, absolute, or would leave the WSI
    root: refused before anything is read, so a crafted CSV cannot make the agent open (and send to
    a provider) arbitrary files."""


class SlideUnreadable(SlideError):
    """The file exists but its pixels cannot be read: a format OpenSlide does not know, a truncated
    or corrupt file, a tile that does not decode, or a handle already closed."""
