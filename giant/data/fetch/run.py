"""Run a plan: every missing slide once, `concurrency` at a time, one progress bar for all bytes."""

from __future__ import annotations

import sys
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2
from tqdm import tqdm

from giant.data.fetch.download import download
from giant.data.fetch.plan import Plan, Target
from giant.data.fetch.report import FetchReport, Outcome
from giant.data.fetch.settings import FetchSettings
from giant.data.fetch.sources import (
    FetchError,
    KaggleClient,
    KaggleUnavailable,
    kaggle_download,
    load_kaggle_client,
)


def http_client(settings: FetchSettings, auth: tuple[str, str] | None = None) -> httpx2.Client:
    """One pooled client for every transfer; redirects followed (download services use them);
    `auth`: basic-auth credentials sent with every request (Kaggle's API, for the label masks)."""
    return httpx2.Client(
        auth=auth,
        timeout=settings.timeout_s,
        follow_redirects=True,
        limits=httpx2.Limits(max_connections=settings.concurrency + 2),
    )


def run_plan(
    plan: Plan,
    client: httpx2.Client,
    settings: FetchSettings,
    *,
    kaggle: Callable[[], KaggleClient] = load_kaggle_client,
) -> FetchReport:
    """Fetch every target of `plan` that is missing. `kaggle` makes the Kaggle client; it is only
    called when a PANDA slide is missing, and a missing package or credentials is one line."""
    todo = plan.to_fetch
    kaggle_client: KaggleClient | None = None
    if any(t.source == "kaggle" for t in todo):
        try:
            kaggle_client = kaggle()
        except KaggleUnavailable as exc:
            print(f"fetch_slides: {exc}", file=sys.stderr)
    total = sum(plan.expected_bytes(t)[0] for t in todo)
    lock = threading.Lock()
    kaggle_lock = threading.Lock()  # the kaggle client is not documented as thread-safe
    with tqdm(
        total=total, unit="B", unit_scale=True, unit_divisor=1024, desc="fetch", file=sys.stderr
    ) as bar:

        def advance(n: int) -> None:
            with lock:
                bar.update(n)

        def one(target: Target) -> Outcome:
            dest = plan.wsi_root / target.image_path
            try:
                if target.source == "kaggle":
                    if kaggle_client is None:
                        raise FetchError("no Kaggle client (see the kaggle line above)")
                    with kaggle_lock:
                        size = _fetch_kaggle(kaggle_client, target, dest)
                    advance(size)
                else:
                    assert target.remote is not None  # the plan described every fetchable target
                    size = download(
                        client, target.remote, dest, settings, name=target.image_path, on_bytes=advance
                    )
            except FetchError as exc:
                return Outcome(
                    image_path=target.image_path, tasks=target.tasks, status="failed", reason=str(exc)
                )
            return Outcome(image_path=target.image_path, tasks=target.tasks, status="fetched", bytes=size)

        with ThreadPoolExecutor(settings.concurrency) as pool:
            fetched = {o.image_path: o for o in pool.map(one, todo)}
    return FetchReport(outcomes=[fetched.get(t.image_path) or _known(t) for t in plan.targets])


def _fetch_kaggle(client: KaggleClient, target: Target, dest: Path) -> int:
    """Into a temporary folder beside the destination, then one atomic rename."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".kaggle-") as folder:
        landed = kaggle_download(client, target.file_id, Path(folder))
        size = landed.stat().st_size
        landed.replace(dest)
    return size


def _known(target: Target) -> Outcome:
    if target.present is not None:
        return Outcome(image_path=target.image_path, tasks=target.tasks, status="present")
    return Outcome(
        image_path=target.image_path, tasks=target.tasks, status="failed", reason=target.error or ""
    )
