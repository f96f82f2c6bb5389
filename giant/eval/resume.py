"""Resume: rerunning the same command (same resolved config, same data) continues the earlier run.

The run key hashes the config hash and the dataset hash, so a changed prompt, model or dataset
never reuses stale answers; which items, how many runs per item and the scoring settings are not
part of it, so a pilot grows into the full run in the same job and a changed scoring rule re-scores.
The index maps a run key to the output directory that holds its results; one small JSON file per
key, written atomically, so parallel sweep jobs never contend.
The carried-over lines and trajectory folders are copied into the new output directory, so every
job directory is self-contained.
"""

from __future__ import annotations

import hashlib
import shutil
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel

from giant.atomic import write_atomic
from giant.errors import ConfigError
from giant.eval.causes import record_cause
from giant.record import (
    RESULTS_FILE,
    SKIPPED,
    JobLayout,
    ResultRecord,
    latest_by_slot,
    read_results,
    write_results,
)
from giant.storage import copy_linking_images

# Failures worth another attempt with retry_failed=true: the model's own failures that a second try may
# turn out differently. Setup failures (a missing slide, a refused key, a server that was down; see
# giant.eval.causes) are retried without being asked.
RETRYABLE = frozenset({"transient", "timeout", "provider_error", "retries_exhausted", "runner_error"})

# Never carried over: a skipped item-run is re-checked for free, and one stopped by a budget continues
# when the rerun's budget allows (its paid calls replay from the ledger).
UNFINISHED = frozenset({SKIPPED, "budget_exceeded"})


def run_key(config_hash: str, dataset_hash: str) -> str:
    return hashlib.sha256(f"{config_hash}\n{dataset_hash}".encode()).hexdigest()[:16]


class ResumeRecord(BaseModel):
    run_key: str
    out_dir: str
    mlflow_run_id: str | None = None
    updated_at: str


class ResumeIndex:
    """run key -> the output directory of the latest run with that key."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def lookup(self, key: str) -> ResumeRecord | None:
        """None when the key was never recorded or its output directory holds no results (gone, or
        killed before the first line was written)."""
        path = self._path(key)
        if not path.is_file():
            return None
        try:
            record = ResumeRecord.model_validate_json(path.read_text(encoding="utf-8"))
        except ValueError:
            raise ConfigError(f"{path}: corrupt resume index entry; delete the file to start fresh") from None
        return record if JobLayout(Path(record.out_dir)).results.is_file() else None

    def record(self, key: str, out_dir: Path, mlflow_run_id: str | None = None) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        entry = ResumeRecord(
            run_key=key,
            out_dir=str(Path(out_dir).resolve()),
            mlflow_run_id=mlflow_run_id,
            updated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        write_atomic(self._path(key), (entry.model_dump_json(indent=2) + "\n").encode())


class Carried(BaseModel):
    """What a resume kept and what it runs again, and why (the one line the rerun prints)."""

    kept: dict[tuple[str, int], ResultRecord]
    retried: dict[str, int]  # why -> item-runs dropped to run again
    kept_failures: int = 0  # the model's failures kept as measurements (retry_failed=true redoes them)

    def line(self) -> str:
        ranked = sorted(self.retried.items(), key=lambda kv: (-kv[1], kv[0]))
        why = ", ".join(f"{n} {reason}" for reason, n in ranked)
        again = f"retrying {sum(self.retried.values())} ({why})" if self.retried else "retrying none"
        failures = (
            f"; {self.kept_failures} model failures kept as measurements (retry_failed=true runs them again)"
            if self.kept_failures
            else ""
        )
        return f"resume: kept {len(self.kept)} item-runs, {again}{failures}"


def _retry_reason(record: ResultRecord, retry_failed: bool) -> str | None:
    """Why a carried record is run again, or None to keep it."""
    if record.status in UNFINISHED:
        return record.status
    cause = record_cause(record)
    if cause is not None:
        return cause
    if retry_failed and record.status in RETRYABLE:
        return f"{record.status} (retry_failed)"
    return None


def left_to_run(resume_from: Path | None, slots: set[tuple[str, int]], *, retry_failed: bool) -> int:
    """How many of `slots` a run resumed from `resume_from` would run again (all without an earlier
    results file), by carry_over's rule: a rerun with nothing left asks no server, not even the
    preflight."""
    source = JobLayout(resume_from).results if resume_from is not None else None
    if source is None or not source.is_file():
        return len(slots)
    latest = latest_by_slot(read_results(source))
    return sum(
        1 for slot in slots if (record := latest.get(slot)) is None or _retry_reason(record, retry_failed)
    )


def carry_over(
    resume_from: Path,
    out_dir: Path,
    slots: set[tuple[str, int]],
    *,
    retry_failed: bool,
    rescore: Callable[[list[ResultRecord]], list[ResultRecord]] | None = None,
) -> Carried:
    """Copy the finished item-runs of `resume_from` into `out_dir`; return them by (key, run index)
    with the counts of those dropped to run again.

    Only slots of the current run count (a record for an item no longer in the data is dropped).
    Item-runs that failed for the setup (giant.eval.causes: a missing slide, a refused key, a server
    that was down) are always run again, and so are skipped and budget-stopped ones (UNFINISHED);
    with retry_failed, the model's retryable failures are too. `out_dir` may equal
    `resume_from`: results.jsonl is then rewritten atomically without the torn or dropped lines.
    Scoring settings are not part of the run key, so `rescore` reads the kept answers again under
    the current ones (giant.eval.rescore_records.rescore_records).
    """
    source = JobLayout(resume_from).results
    if not source.is_file():
        raise ConfigError(
            f"resume_from={resume_from}: no {RESULTS_FILE} there; pass a run's output directory"
        )
    kept: dict[tuple[str, int], ResultRecord] = {}
    retried: Counter[str] = Counter()
    for slot, record in latest_by_slot(read_results(source)).items():
        if slot not in slots:
            continue
        why = _retry_reason(record, retry_failed)
        if why is None:
            kept[slot] = record
        else:
            retried[why] += 1
    if rescore is not None:
        kept = {record.slot: record for record in rescore(list(kept.values()))}
    out_dir.mkdir(parents=True, exist_ok=True)
    same_dir = resume_from.resolve() == out_dir.resolve()
    if not same_dir:
        for record in kept.values():
            if record.trajectory:
                src, dst = resume_from / record.trajectory, out_dir / record.trajectory
                if src.is_dir() and not dst.exists():
                    shutil.copytree(src, dst, copy_function=copy_linking_images)  # images stay on disk once
    write_results(JobLayout(out_dir).results, kept.values())
    failures = sum(record.status in RETRYABLE for record in kept.values())
    return Carried(kept=kept, retried=dict(retried), kept_failures=failures)
