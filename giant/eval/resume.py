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
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel

from giant.errors import ConfigError
from giant.eval.results import SKIPPED, ResultRecord, latest_by_slot, read_results
from giant.job_layout import RESULTS_FILE, JobLayout
from giant.llm.ledger import write_atomic
from giant.storage import copy_linking_images

# Failures worth another attempt with retry_failed=true: the cause was outside the model's answer.
RETRYABLE = frozenset(
    {"transient", "timeout", "provider_error", "retries_exhausted", "slide_missing", "runner_error"}
)

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


def carry_over(
    resume_from: Path,
    out_dir: Path,
    slots: set[tuple[str, int]],
    *,
    retry_failed: bool,
    rescore: Callable[[list[ResultRecord]], list[ResultRecord]] | None = None,
) -> dict[tuple[str, int], ResultRecord]:
    """Copy the finished item-runs of `resume_from` into `out_dir`; return them by (key, run index).

    Only slots of the current run count (a record for an item no longer in the data is dropped);
    with retry_failed, retryable failures are dropped too so they run again. Skipped and
    budget-stopped item-runs are always dropped (UNFINISHED). `out_dir` may equal
    `resume_from`: results.jsonl is then rewritten atomically without the torn or dropped lines.
    Scoring settings are not part of the run key, so `rescore` reads the kept answers again under
    the current ones (giant.eval.rescore.rescore_records).
    """
    source = JobLayout(resume_from).results
    if not source.is_file():
        raise ConfigError(
            f"resume_from={resume_from}: no {RESULTS_FILE} there; pass a run's output directory"
        )
    kept = {
        slot: record
        for slot, record in latest_by_slot(read_results(source)).items()
        if slot in slots
        and record.status not in UNFINISHED
        and not (retry_failed and record.status in RETRYABLE)
    }
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
    text = "".join(record.model_dump_json() + "\n" for record in kept.values())
    write_atomic(JobLayout(out_dir).results, text.encode())
    return kept
