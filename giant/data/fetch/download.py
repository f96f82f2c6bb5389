"""One slide over HTTP: resumable, verified, renamed into place only when whole.

Slides are hundreds of megabytes, so a dropped connection must not cost the bytes already here:
they stay in `<dest>.part` and the next attempt asks for the rest with a Range request. A server that
ignores Range (it answers 200 with the whole body) is downloaded from the start. The finished file
is checked against the size and md5 the source announced; a mismatch is downloaded once more, then
reported. Only a verified file is renamed (os.replace, atomic) to its final name, so the resolver
never sees a partial slide.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path

import httpx2

from giant.data.fetch.settings import FetchSettings
from giant.data.fetch.sources import FetchError, Remote, Transient, raise_if_transient, with_retries

CHUNK = 1 << 20
_CONTENT_RANGE = re.compile(r"bytes (?:(\d+)-\d+|\*)/(\d+)")


def part_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part")


def download(
    client: httpx2.Client,
    remote: Remote,
    dest: Path,
    settings: FetchSettings,
    *,
    name: str,
    on_bytes: Callable[[int], None] = lambda n: None,
) -> int:
    """Fetch `remote` into `dest`; returns the file's size. Raises FetchError naming `name`."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = part_path(dest)
    problem = ""
    for _ in range(2):  # a file that fails verification is downloaded once more
        announced = _transfer(client, remote.url, part, settings, name, on_bytes)
        problem = _verify(part, remote.size or announced, remote.md5)
        if not problem:
            size = part.stat().st_size
            os.replace(part, dest)
            return size
        part.unlink()
    raise FetchError(f"{name}: {problem} after downloading it twice from {remote.url}")


def _transfer(
    client: httpx2.Client,
    url: str,
    part: Path,
    settings: FetchSettings,
    name: str,
    on_bytes: Callable[[int], None],
) -> int | None:
    """Bring `part` up to the whole body, retrying transient failures (each attempt resumes from the
    bytes `part` holds by then); returns the total size the server announced (None if it gave none)."""
    return with_retries(settings, lambda: _attempt(client, url, part, name, on_bytes), what=name, url=url)


def _attempt(
    client: httpx2.Client, url: str, part: Path, name: str, on_bytes: Callable[[int], None]
) -> int | None:
    offset = part.stat().st_size if part.exists() else 0
    headers = {"Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    total: int | None
    with client.stream("GET", url, headers=headers) as reply:
        code = reply.status_code
        if code == 416 and offset:  # the part already holds everything (or more): check it
            match = _CONTENT_RANGE.fullmatch(reply.headers.get("content-range", ""))
            total = int(match.group(2)) if match else None
            if total == offset:
                return total
            part.unlink()
            raise Transient(f"HTTP 416 for bytes {offset}- (restarting from byte 0)")
        raise_if_transient(reply)
        if code >= 400:
            raise FetchError(f"{name}: HTTP {code} from {url}")
        if code == 206:
            match = _CONTENT_RANGE.fullmatch(reply.headers.get("content-range", ""))
            if not match or int(match.group(1) or -1) != offset:
                part.unlink()
                raise Transient(f"unexpected Content-Range {reply.headers.get('content-range')!r}")
            total = int(match.group(2))
            mode = "ab"
        else:  # 200: the whole body (the server ignored Range, or none was sent)
            length = reply.headers.get("content-length")
            total = int(length) if length and length.isdigit() else None
            mode, offset = "wb", 0
        with part.open(mode) as out:
            for chunk in reply.iter_raw():  # as received: a sized chunker would lose its tail on a drop
                out.write(chunk)
                on_bytes(len(chunk))
    size = part.stat().st_size
    if total is not None and size < total:
        raise Transient(f"connection closed at byte {size} of {total}")
    return total


def _verify(path: Path, size: int | None, md5: str | None) -> str:
    """'' when the file matches what the source announced, else what differs."""
    actual = path.stat().st_size
    if size is not None and actual != size:
        return f"size {actual} bytes, expected {size}"
    if md5:
        digest = hashlib.md5(usedforsecurity=False)
        with path.open("rb") as handle:
            while block := handle.read(CHUNK):
                digest.update(block)
        if digest.hexdigest() != md5.lower():
            return f"md5 {digest.hexdigest()}, expected {md5}"
    return ""
