"""The ledger: every paid provider reply, kept so that no call is ever paid for twice.

A call's key hashes what determines its reply: the provider, the model, the settings that change
the request or the reply (not the key's variable, pacing, timeouts, retries or the price tier), the
exact wire request with each image replaced by its hash (less its `service_tier` and
`prompt_cache_retention`), and the item-run's run index (the runs of one item are independent
samples, so they never answer each other), and, for a request identical to an earlier one of the same
episode (a retry after a reply that did not parse), how many came before it. A rerun that sends the
same request for the same run is answered from here at no cost: a killed episode continues where it
stopped, a pilot's items are free in the full run, and more runs per item reuse the runs already paid
for.

Layout (plain JSON, inspectable with `python -m giant.llm.ledger DIR`):
  calls/<key[:2]>/<key>.json   the sanitized request, the raw reply, its usage and cost, the time
  batches/<batch_id>.json      provider.batch=true: each batch's requests (giant.llm.batch_records)
  images/<sha256>.jpg          each image once, however many calls and episodes sent it; the
                               trajectory folders' copies are hard links to these (giant.storage),
                               written when the episode renders the image, so a call that was never
                               paid (an error, a refused budget) may leave its image here
Every file is written to a temporary name in its own folder and renamed into place, so several
processes (joblib workers, SLURM array tasks on a shared filesystem) can write at once without locks:
a reader sees a whole file or none, and two writers of one key write the same reply's record.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from giant.atomic import write_atomic
from giant.core import EncodedImage
from giant.llm.batch_records import BATCHES_DIR, describe
from giant.llm.types import Conversation, ImagePart, UserMessage
from giant.storage import image_name

LEDGER_DIR = "ledger"  # under paths.cache_dir
# Settings that never change what the server answers: the key's variable, pacing, retries, prices, and
# the price tier (a flex or batch reply is the standard one, billed at half: a pilot paid at one
# tier replays free under another).
_NOT_IN_KEY = frozenset(
    {"api_key_env", "rpm", "tpm", "timeout_s", "max_retries", "pricing_file"}
    | {"service_tier", "flex_retries", "flex_fallback"}
    | {"batch", "batch_max_requests", "batch_max_mb", "batch_wait_s", "batch_poll_s", "cache_ttl"}
    | {"prompt_cache_retention"}  # how long the prefix cache lives, like cache_ttl
    | {"preflight", "image_tokens", "max_model_len"}  # a self-hosted server's checks and planning
    | {"gpu_hour_usd", "gpus"}  # what its GPU time costs
)
# Wire fields of the same kind: what the request asks of billing, not of the model.
_WIRE_NOT_IN_KEY = frozenset({"service_tier", "prompt_cache_retention"})


class LedgerEntry(BaseModel):
    """One paid call as the ledger keeps it."""

    key: str
    provider: str
    model: str
    # None, both: a batch reply kept when its batch ended, before (or without) a call asking for it
    # (giant.llm.batch); the key alone answers that call, which then rewrites the entry whole.
    run_index: int | None
    time: float
    request: Any  # the wire request, images as hashes
    response_type: str  # "module:Class" of the SDK reply, to rebuild it on replay
    response: dict[str, Any]  # the SDK reply's model_dump(mode="json")
    usage: dict[str, Any]  # giant.llm.types.Usage as first counted
    cost_usd: float | None

    def reply(self) -> Any:
        """The kept reply rebuilt as the SDK object. The SDKs build replies without validation (a
        server may leave a declared field null), and so does this: their model_construct builds the
        nested objects too."""
        module, _, name = self.response_type.partition(":")
        return getattr(importlib.import_module(module), name).model_construct(**self.response)


def call_key(
    *, provider: str, model: str, settings: dict[str, Any], request: Any, run_index: int, repeat: int = 0
) -> str:
    """sha256 over what determines a reply (module docstring); `request` is already sanitized.
    `repeat` counts the earlier identical requests of the same episode (giant.llm.types.SentRequests):
    it enters the key only when above 0, so every first request keeps the key it always had."""
    kept = {name: value for name, value in settings.items() if name not in _NOT_IN_KEY}
    if isinstance(request, dict):
        request = {name: value for name, value in request.items() if name not in _WIRE_NOT_IN_KEY}
    request = _without_ttl(request)
    payload = {
        "provider": provider,
        "model": model,
        "settings": kept,
        "request": request,
        "run_index": run_index,
    }
    if repeat:
        payload["repeat"] = repeat
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def _without_ttl(value: Any) -> Any:
    """The request less its cache_control TTLs (provider.cache_ttl): how long the server keeps a
    prefix is billing, not the answer, so a pilot's standard calls replay in a 1h batch campaign."""
    if isinstance(value, list):
        return [_without_ttl(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {name: _without_ttl(v) for name, v in value.items()}
    if isinstance(out.get("cache_control"), dict):
        out["cache_control"] = {k: v for k, v in out["cache_control"].items() if k != "ttl"}
    return out


class Ledger:
    """The ledger folder. `replay=False` (ledger=false) still keeps every reply but answers nothing
    from it, for those who want fresh samples."""

    def __init__(self, root: Path, *, replay: bool = True) -> None:
        self.root = Path(root)
        self.replay = replay

    def _call_path(self, key: str) -> Path:
        return self.root / "calls" / key[:2] / f"{key}.json"

    def get(self, key: str) -> LedgerEntry | None:
        """The kept reply for `key`, or None (not kept, replay off, or an unreadable file)."""
        return self.read(key) if self.replay else None

    def read(self, key: str) -> LedgerEntry | None:
        """The kept reply for `key` whether or not replay is on (a batch reply this run collected)."""
        try:
            return LedgerEntry.model_validate_json(self._call_path(key).read_bytes())
        except (OSError, ValueError):
            return None  # absent, or damaged by hand: the call is paid again and the file rewritten

    def image_path(self, sha256: str) -> Path:
        return self.root / "images" / image_name(sha256)

    def keep_image(self, image: EncodedImage) -> Path:
        """The image's one file in the ledger, written if new. Trajectory folders hard-link to it
        (giant.storage), so an image a model was sent is on disk once, not once per place."""
        path = self.image_path(image.sha256)
        if not path.exists():
            write_atomic(path, base64.b64decode(image.data_b64))
        return path

    def put(self, entry: LedgerEntry, conversation: Conversation | None = None) -> None:
        """Keep a paid reply and the images its request carried (each image written once; a batch
        reply kept without its call has none at hand, and its episode wrote them already)."""
        for message in conversation.messages if conversation is not None else []:
            if isinstance(message, UserMessage):
                for part in message.parts:
                    if isinstance(part, ImagePart):
                        self.keep_image(part.image)
        write_atomic(self._call_path(entry.key), entry.model_dump_json().encode())

    @staticmethod
    def entry(
        key: str,
        *,
        provider: str,
        model: str,
        run_index: int | None,
        request: Any,
        response: Any,
        usage: Any,
    ) -> LedgerEntry:
        kind = type(response)
        return LedgerEntry(
            key=key,
            provider=provider,
            model=model,
            run_index=run_index,
            time=time.time(),
            request=request,
            response_type=f"{kind.__module__}:{kind.__qualname__}",
            response=response.model_dump(mode="json"),
            usage=usage.model_dump(mode="json"),
            cost_usd=usage.cost_usd,
        )


class LedgerStats(BaseModel):
    calls: int
    images: int
    bytes: int
    dollars: float


def stats(root: Path) -> LedgerStats:
    """What a ledger folder holds: its calls, images, bytes on disk and the dollars its calls cost."""
    calls = sorted((root / "calls").glob("*/*.json"))
    images = sorted((root / "images").glob("*.jpg"))
    dollars = 0.0
    for path in calls:
        dollars += LedgerEntry.model_validate_json(path.read_bytes()).cost_usd or 0.0
    size = sum(path.stat().st_size for path in [*calls, *images])
    return LedgerStats(calls=len(calls), images=len(images), bytes=size, dollars=dollars)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m giant.llm.ledger LEDGER_DIR (e.g. .cache/giant/ledger)", file=sys.stderr)
        return 2
    if not Path(argv[0]).exists():  # created by the first paid call
        print(f"0 calls: no ledger at {argv[0]} yet (no paid call has been made with this cache folder)")
        return 0
    if not Path(argv[0]).is_dir():
        print(f"ledger: {argv[0]} is not a folder; pass the ledger folder", file=sys.stderr)
        return 2
    s = stats(Path(argv[0]))
    print(f"{s.calls} calls (${s.dollars:.4f} when paid), {s.images} images, {s.bytes / 1e6:.1f} MB")
    for line in describe(Path(argv[0]) / BATCHES_DIR):  # provider.batch=true: its batches, as last seen
        print(f"batch {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
