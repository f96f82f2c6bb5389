"""PANDA's label masks (`train_label_masks/<image_id>_mask.tiff`) from the same Kaggle competition as
the slides, into `dataset.annotations.path`, for the evidence metrics (docs/navigation.md).

The competition's file list (Kaggle's REST API, `competitions/data/list/<competition>`, paged) gives
each mask's size before any byte moves, so a dry run can say what a fetch will take; the bytes come
from `competitions/data/download/<competition>/<name>` through the slides' own downloader (resumable
`.part` files, size- and, where the list gives one, md5-checked, renamed into place only when whole).
The Kaggle user and key are read from KAGGLE_USERNAME / KAGGLE_KEY or ~/.kaggle/kaggle.json, never
from the config. Not every PANDA slide has a mask: those are listed once, and are "not annotated".
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import httpx2

from giant.core import Item
from giant.data.fetch.plan import Plan, Target
from giant.data.fetch.settings import FetchSettings
from giant.data.fetch.sources import (
    KAGGLE_COMPETITION,
    FetchError,
    Remote,
    raise_if_transient,
    with_retries,
)

MASK_FOLDER = "train_label_masks"
MASK_SUFFIX = "_mask.tiff"


def mask_name(item: Item) -> str:
    """The mask file of an item's slide: `<image_id>_mask.tiff` (the slide's stem is its image_id)."""
    return f"{Path(item.image_path).name.split('.')[0]}{MASK_SUFFIX}"


def mask_plan(items: Sequence[Item], folder: Path, client: httpx2.Client, settings: FetchSettings) -> Plan:
    """One target per distinct slide's mask under `folder`; sizes from the competition's file list."""
    listed: dict[str, Remote] | None = None
    targets: dict[str, Target] = {}
    for item in items:
        name = mask_name(item)
        if name in targets:
            if item.benchmark not in targets[name].tasks:
                targets[name].tasks.append(item.benchmark)
            continue
        target = Target(image_path=name, file_id=name, source="kaggle_files", tasks=[item.benchmark])
        if (folder / name).is_file():
            target.present = "annotations"
        else:
            listed = listed if listed is not None else _file_list(client, settings)
            target.remote = listed.get(f"{MASK_FOLDER}/{name}")
            if target.remote is None:
                target.error = f"no {MASK_FOLDER}/{name} in the competition's files (slide not annotated)"
        targets[name] = target
    return Plan(wsi_root=folder, targets=list(targets.values()), estimates=settings.estimate_bytes)


def _file_list(client: httpx2.Client, settings: FetchSettings) -> dict[str, Remote]:
    """name -> Remote of every file of the competition (every page of the list)."""
    url = f"{settings.kaggle_url}/competitions/data/list/{KAGGLE_COMPETITION}"
    found: dict[str, Remote] = {}
    token = ""
    while True:
        reply = with_retries(settings, partial(_get, client, url, token), what="Kaggle file list", url=url)
        try:
            data = reply.json()
            files = data["files"] if isinstance(data, dict) else data
            for entry in files:
                name = str(entry["name"])
                found[name] = Remote(
                    url=f"{settings.kaggle_url}/competitions/data/download/{KAGGLE_COMPETITION}/{name}",
                    size=int(entry["totalBytes"]),
                    md5=entry.get("md5"),
                )
        except (ValueError, KeyError, TypeError) as exc:
            raise FetchError(f"Kaggle file list: unexpected reply from {url} ({exc})") from None
        token = data.get("nextPageToken") or "" if isinstance(data, dict) else ""
        if not token:
            return found


def _get(client: httpx2.Client, url: str, token: str) -> httpx2.Response:
    try:
        reply = client.get(url, params={"pageToken": token} if token else None)
    except httpx2.ConnectError as exc:
        raise FetchError(f"Kaggle file list: {type(exc).__name__} from {url}") from exc
    raise_if_transient(reply)
    if reply.status_code != 200:
        raise FetchError(
            f"Kaggle file list: HTTP {reply.status_code} from {url} (are the competition's rules accepted, "
            "and KAGGLE_USERNAME / KAGGLE_KEY or ~/.kaggle/kaggle.json set?)"
        )
    return reply


def kaggle_auth() -> tuple[str, str] | None:
    """The user's Kaggle credentials, from the environment or ~/.kaggle/kaggle.json (None: anonymous):
    the HTTP client of a mask fetch sends them (basic auth) with every request."""
    user, key = os.environ.get("KAGGLE_USERNAME"), os.environ.get("KAGGLE_KEY")
    if user and key:
        return (user, key)
    path = Path(os.environ.get("KAGGLE_CONFIG_DIR", Path.home() / ".kaggle")) / "kaggle.json"
    try:
        token = json.loads(path.read_text(encoding="utf-8"))
        return (str(token["username"]), str(token["key"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
