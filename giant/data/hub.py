"""One file of a Hugging Face dataset repository, kept in giant's cache: downloaded or refreshed when
the Hub answers, the cached copy when it does not, and one line within seconds when neither works.

hf_hub_download alone takes too long to give up: when its first HEAD request fails and nothing is
cached, it asks again with five retries and a 60 s timeout each (24 s on a refused connection,
minutes on a server that never answers), logging two warnings per attempt. So one HEAD request
without retries goes first: if it is answered, hf_hub_download fetches (or confirms) the file; if
not, only the cache is looked at. Before its first request huggingface_hub also waits up to 3 s for
its telemetry (a list of agent harnesses, unless HF_HUB_DISABLE_TELEMETRY is set), so a Hub that
accepts connections and never answers costs 3 s + HEAD_TIMEOUT_S.
"""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from giant.errors import ConfigError

log = logging.getLogger(__name__)

HEAD_TIMEOUT_S = 5  # the wait for the HEAD request's answer; HF_HUB_ETAG_TIMEOUT, when set, wins
REASON_WIDTH = 120  # characters of an underlying error kept in the one-line message (whole words)


@dataclass(frozen=True)
class HubFile:
    """A file in a Hugging Face dataset repository (dataset.hf_repo / dataset.hf_file), downloaded
    once into `cache_dir` (None: huggingface_hub's own cache)."""

    repo: str
    filename: str
    cache_dir: Path | None = None


def download(hub: HubFile, *, instead: str) -> Path:
    """The local path of `hub`'s file; a ConfigError (one line, naming the setting `instead` that
    takes a local copy) when the Hub cannot be reached and no copy is cached."""
    from huggingface_hub import hf_hub_download

    with _hub_logging():
        unreachable = _probe(hub)
        if unreachable is None:
            try:
                local = hf_hub_download(
                    hub.repo,
                    hub.filename,
                    repo_type="dataset",
                    cache_dir=hub.cache_dir,
                    etag_timeout=HEAD_TIMEOUT_S,
                )
                return Path(local)
            except _download_errors() as exc:
                unreachable = _reason(exc)
        return _cached(hub, unreachable, instead)


def _probe(hub: HubFile) -> str | None:
    """One HEAD request for the file, without retries: None when the Hub answered, else why not."""
    import httpx2
    from huggingface_hub import constants, get_hf_file_metadata, hf_hub_url

    # hf_hub_download's own rule for its HEAD request: the environment's setting beats the caller's.
    explicit = constants.HF_HUB_ETAG_TIMEOUT != constants.DEFAULT_ETAG_TIMEOUT
    timeout = constants.HF_HUB_ETAG_TIMEOUT if explicit else HEAD_TIMEOUT_S
    try:
        get_hf_file_metadata(hf_hub_url(hub.repo, hub.filename, repo_type="dataset"), timeout=timeout)
    except httpx2.TimeoutException:
        return f"no answer from {constants.ENDPOINT} within {timeout} s; HF_HUB_ETAG_TIMEOUT can raise that"
    except _download_errors() as exc:
        return _reason(exc)
    return None


def _download_errors() -> tuple[type[Exception], ...]:
    """What a download can raise with no bug behind it: the transport's errors, and OSError, the base
    of huggingface_hub's HTTP, offline and cache errors (HfHubHTTPError, OfflineModeIsEnabled,
    LocalEntryNotFoundError, FileMetadataError) and of a cache folder that cannot be written."""
    import httpx2

    return (httpx2.TransportError, OSError)


def _cached(hub: HubFile, unreachable: str, instead: str) -> Path:
    """The copy an earlier download left in the cache (found without any request)."""
    from huggingface_hub import constants, hf_hub_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    try:
        local = hf_hub_download(
            hub.repo, hub.filename, repo_type="dataset", cache_dir=hub.cache_dir, local_files_only=True
        )
    except (LocalEntryNotFoundError, HFValidationError):  # not cached, or a repo id that cannot be
        cache = hub.cache_dir or constants.HF_HUB_CACHE
        raise ConfigError(
            f"could not download {hub.filename} from the Hugging Face dataset {hub.repo} ({unreachable}) "
            f"and no copy is cached in {cache}; pass {instead}=/path/to/{hub.filename}"
        ) from None
    log.info("%s: the Hub is out of reach (%s); using the cached copy %s", hub.filename, unreachable, local)
    return Path(local)


def _reason(exc: BaseException) -> str:
    """Why a request failed, in a few words: the error's type says what happened, its text is kept
    only where it adds something (shortened at a word boundary, never mid-word)."""
    import httpx2
    from huggingface_hub import constants
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled

    if isinstance(exc, LocalEntryNotFoundError) and exc.__cause__ is not None:
        exc = exc.__cause__  # hf_hub_download's wrapper around the request that failed
    if isinstance(exc, OfflineModeIsEnabled):
        return "HF_HUB_OFFLINE is set"
    if isinstance(exc, httpx2.TimeoutException):
        return f"no answer from {constants.ENDPOINT} in time"
    if isinstance(exc, httpx2.TransportError):
        return f"cannot reach {constants.ENDPOINT}: {_short(str(exc))}"
    if isinstance(exc, HfHubHTTPError):
        said = f": {_short(exc.server_message)}" if exc.server_message else ""
        return f"HTTP {exc.response.status_code} from {constants.ENDPOINT}{said}"
    return _short(str(exc))


def _short(text: str) -> str:
    first = next((line for line in text.splitlines() if line.strip()), "")
    return textwrap.shorten(first, REASON_WIDTH, placeholder=" ...") or "no details"


@contextmanager
def _hub_logging() -> Iterator[None]:
    """While a download runs, only errors of huggingface_hub and its transport are logged: a failure
    ends in one line of ours, and their retry warnings and request notes would only bury it.

    huggingface_hub gives its logger a stderr handler of its own and lets records propagate to the
    root logger as well, so under Hydra (whose root handler prints to stdout and the job log) each of
    its warnings appeared twice. Removing the library's handler, for good, leaves the root's."""
    library, transport = logging.getLogger("huggingface_hub"), logging.getLogger("httpx2")
    if logging.getLogger().handlers:
        for handler in list(library.handlers):
            library.removeHandler(handler)
    levels = library.level, transport.level
    library.setLevel(logging.ERROR)
    transport.setLevel(logging.ERROR)
    try:
        yield
    finally:
        library.setLevel(levels[0])
        transport.setLevel(levels[1])
