"""Where each MultiPathQA task's slides come from, keyed by the CSV's `file_id` column.

- TCGA tasks: the GDC API. `file_id` is the GDC file UUID; the files endpoint gives name, size and
  md5, the data endpoint the bytes (open access, no token).
- gtex: the GTEx histology image service; `file_id` is the tissue sample id and the reply is the
  Aperio SVS (stored under the CSV's image_path even when it says .tiff: OpenSlide reads the content).
- panda: the Kaggle competition's `train_images/<file_id>`, through the optional `kaggle` package and
  the user's own Kaggle credentials (the competition rules must be accepted on the website first).
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import httpx2
from pydantic import BaseModel, ValidationError

from giant.data.fetch.settings import FetchSettings
from giant.data.slides import TCGA_BENCHMARKS
from giant.retry import RetryPolicy, retry_after_s

T = TypeVar("T")

Source = Literal["gdc", "gtex", "kaggle", "kaggle_files"]  # kaggle_files: over HTTP (data/fetch/masks.py)
SOURCES: dict[str, Source] = {**dict.fromkeys(TCGA_BENCHMARKS, "gdc"), "gtex": "gtex", "panda": "kaggle"}

KAGGLE_COMPETITION = "prostate-cancer-grade-assessment"
KAGGLE_HELP = (
    "PANDA slides come from Kaggle: pip install -e '.[kaggle]', put your API token in "
    "~/.kaggle/kaggle.json (or set KAGGLE_USERNAME and KAGGLE_KEY), and accept the rules of "
    f"https://www.kaggle.com/competitions/{KAGGLE_COMPETITION} on the website first"
)


class FetchError(Exception):
    """One slide could not be fetched; the message is the reason shown in the final table."""


class Transient(Exception):
    """Worth another attempt: a 408, 429 or 5xx, a short body, a range the server got wrong.
    `retry_after_s` is the pause the server asked for (its Retry-After), if any."""

    def __init__(self, reason: str, retry_after_s: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after_s = retry_after_s


def raise_if_transient(reply: httpx2.Response) -> None:
    """A timeout, a rate limit or a server error may pass; any other 4xx (401, 403, 404) will not."""
    code = reply.status_code
    if code in (408, 429) or code >= 500:
        raise Transient(f"HTTP {code}", retry_after_s(reply.headers))


def _asked(exc: BaseException) -> float | None:
    return exc.retry_after_s if isinstance(exc, Transient) else None


def with_retries(settings: FetchSettings, attempt: Callable[[], T], *, what: str, url: str) -> T:
    """`attempt()` under giant.retry's policy: Transient and transport failures (timeouts, dropped
    connections) are retried up to `settings.retries` times; the last one becomes a FetchError."""
    policy = RetryPolicy(
        retryable=(Transient, httpx2.TransportError),
        asked=_asked,
        base_s=settings.backoff_s,
        max_s=settings.backoff_max_s,
        min_s=settings.backoff_min_s,
    )
    try:
        return policy.call(attempt, settings.retries)
    except (Transient, httpx2.TransportError) as exc:
        reason = str(exc) if isinstance(exc, Transient) else f"{type(exc).__name__}: {exc}"
        raise FetchError(f"{what}: {reason} from {url} (gave up after {settings.retries} retries)") from exc


class Remote(BaseModel):
    """What a source says about one slide before its bytes are fetched."""

    url: str
    size: int | None = None  # bytes, when the source reports it
    md5: str | None = None


class GdcFile(BaseModel):
    file_name: str
    file_size: int
    md5sum: str


def gdc_remote(client: httpx2.Client, settings: FetchSettings, file_id: str) -> Remote:
    """File metadata from the GDC files endpoint; the bytes come from the data endpoint. A 408, 429,
    5xx or dropped reply is retried; an unreachable host is not (offline, every slide would wait)."""
    url = f"{settings.gdc_url}/files/{file_id}"

    def attempt() -> httpx2.Response:
        try:
            reply = client.get(url, params={"fields": "file_name,file_size,md5sum"})
        except httpx2.ConnectError as exc:
            raise FetchError(f"GDC metadata: {type(exc).__name__} from {url}") from exc
        raise_if_transient(reply)
        if reply.status_code != 200:
            raise FetchError(f"GDC metadata: HTTP {reply.status_code} from {url}")
        return reply

    reply = with_retries(settings, attempt, what="GDC metadata", url=url)
    try:
        meta = GdcFile.model_validate(reply.json().get("data", {}))
    except (ValueError, ValidationError, AttributeError) as exc:
        raise FetchError(f"GDC metadata: unexpected reply from {url}") from exc
    return Remote(url=f"{settings.gdc_url}/data/{file_id}", size=meta.file_size, md5=meta.md5sum)


def gtex_remote(gtex_url: str, sample_id: str) -> Remote:
    """The GTEx service reports no size or checksum ahead of the bytes."""
    return Remote(url=f"{gtex_url}/{sample_id}")


class KaggleClient(Protocol):
    """The one call of kaggle's KaggleApi the fetcher uses (a test passes a fake)."""

    def competition_download_file(
        self,
        competition: str,
        file_name: str,
        path: str | None = None,
        force: bool = False,
        quiet: bool = False,
    ) -> Any: ...


class KaggleUnavailable(Exception):
    """No kaggle package or no credentials; the message is KAGGLE_HELP."""


def load_kaggle_client() -> KaggleClient:
    """The authenticated KaggleApi. Credentials are looked for first: importing kaggle without
    them makes some versions print and exit instead of raising."""
    config_dir = Path(os.environ.get("KAGGLE_CONFIG_DIR", Path.home() / ".kaggle"))
    has_env = bool(os.environ.get("KAGGLE_USERNAME") and os.environ.get("KAGGLE_KEY"))
    if not has_env and not (config_dir / "kaggle.json").is_file():
        raise KaggleUnavailable(KAGGLE_HELP)
    try:
        from kaggle.api.kaggle_api_extended import KaggleApi

        api = KaggleApi()
        api.authenticate()
    except (ImportError, OSError, ValueError, SystemExit) as exc:
        raise KaggleUnavailable(KAGGLE_HELP) from exc
    return api


def kaggle_download(client: KaggleClient, file_id: str, folder: Path) -> Path:
    """`train_images/<file_id>` into `folder`; Kaggle may hand a large file over zipped."""
    name = Path(file_id).name
    try:
        client.competition_download_file(
            KAGGLE_COMPETITION, f"train_images/{name}", path=str(folder), force=True, quiet=True
        )
    except Exception as exc:  # the kaggle client raises its own HTTP and API error types
        first = (str(exc).splitlines() or [""])[0][:160]
        raise FetchError(
            f"Kaggle: {type(exc).__name__}: {first} (competition {KAGGLE_COMPETITION}, "
            f"file train_images/{name}; are its rules accepted?)"
        ) from exc
    landed, zipped = folder / name, folder / f"{name}.zip"
    if not landed.is_file() and zipped.is_file():
        with zipfile.ZipFile(zipped) as archive:
            archive.extract(name, folder)
    if not landed.is_file() or landed.stat().st_size == 0:
        raise FetchError(f"Kaggle: train_images/{name} did not arrive (competition {KAGGLE_COMPETITION})")
    return landed
