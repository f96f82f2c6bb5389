"""The batches a run submitted, recorded beside the ledger so that no request is submitted twice.

A batch's keys (its requests' ledger keys, which are also their custom_ids) are written before it is
submitted, and its id as soon as the API has created it; a killed, preempted or requeued job reads
these files back and waits on the batch its call is already in instead of submitting that call
again (giant.llm.batch). Files are written whole (giant.atomic), one per batch:
  batches/pending-<record>.json  before submission: the keys, no id yet
  batches/<batch_id>.json        once the batch exists: the keys, the id, the state last seen
A pending file that outlives its process means the job died while the create request was on the
wire: the next run asks the API whether that batch exists (giant.llm.batch: OpenAI by the record id
sent as the batch's metadata, Anthropic by size and creation time) and waits on it if so. Once every
reply of a batch is in the ledger its record says `collected`, and reruns no longer watch it.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from pydantic import BaseModel, ValidationError

from giant.atomic import write_atomic

BATCHES_DIR = "batches"  # under the ledger folder
_PENDING = "pending-"


class BatchRecord(BaseModel):
    """One batch as a rerun needs it: which requests it carries and where to ask for them."""

    record_id: str
    provider: str
    batch_id: str | None = None  # None until the API has created the batch
    round: int  # the collector's step round that submitted it, for the progress log
    keys: list[str]
    created: float
    state: str = "submitting"  # the API's state when last seen (informational: reruns ask the API)
    seen: float | None = None
    collected: bool = False  # its replies are in the ledger: a rerun asks the ledger, not the batch


class BatchBook:
    """The `batches/` folder of one ledger."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, record: BatchRecord) -> Path:
        name = record.batch_id if record.batch_id is not None else f"{_PENDING}{record.record_id}"
        return self.root / f"{name}.json"

    def _write(self, record: BatchRecord) -> None:
        write_atomic(self._path(record), record.model_dump_json().encode())

    def before_submit(self, provider: str, keys: list[str], round_: int) -> BatchRecord:
        """Record the keys about to be submitted (before the request that creates the batch)."""
        record = BatchRecord(
            record_id=uuid.uuid4().hex, provider=provider, round=round_, keys=keys, created=time.time()
        )
        self._write(record)
        return record

    def created(self, record: BatchRecord, batch_id: str) -> BatchRecord:
        """The batch exists: its file now carries the id, and the pending file goes."""
        pending = self._path(record)
        done = record.model_copy(update={"batch_id": batch_id, "state": "submitted"})
        self._write(done)
        pending.unlink(missing_ok=True)
        return done

    def not_created(self, record: BatchRecord) -> None:
        """The API refused the batch: nothing of it was submitted."""
        self._path(record).unlink(missing_ok=True)

    def seen(self, record: BatchRecord, state: str) -> BatchRecord:
        updated = record.model_copy(update={"state": state, "seen": time.time()})
        self._write(updated)
        return updated

    def collected(self, record: BatchRecord) -> BatchRecord:
        """Every reply of the batch is in the ledger."""
        done = record.model_copy(update={"collected": True})
        self._write(done)
        return done

    def records(self, provider: str | None = None) -> list[BatchRecord]:
        """Every readable record, oldest first (a key in two batches: the newest one counts)."""
        found = []
        for path in sorted(self.root.glob("*.json")):
            try:
                record = BatchRecord.model_validate_json(path.read_bytes())
            except (OSError, ValidationError):
                continue  # damaged by hand: listed as nothing, its keys are asked again
            if provider is None or record.provider == provider:
                found.append(record)
        return sorted(found, key=lambda r: r.created)


def describe(root: Path, now: float | None = None) -> list[str]:
    """One line per recorded batch for `python -m giant.llm.ledger`: id, state, requests, age."""
    now = time.time() if now is None else now
    lines = []
    for record in BatchBook(root).records():
        name = record.batch_id or f"(no id: the job died while creating it; record {record.record_id})"
        age = (now - record.created) / 60
        kept = ", collected" if record.collected else ""
        lines.append(
            f"{record.provider} {name}: {record.state}{kept}, {len(record.keys)} requests, "
            f"round {record.round}, {age:.0f} min old"
        )
    return lines
