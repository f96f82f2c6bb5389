"""results.jsonl: one line per finished item-run, the durable record a killed run resumes from.

Lines are appended, flushed and fsync'd as each item-run finishes, so a crash loses at most the line
being written; the reader drops a torn last line instead of failing. The summary is always computed
from these lines, never from in-memory state, so a resumed run and an uninterrupted one agree.

Patch mode's per-patch answers are a list (`answers`). Folders written before that kept them as JSON
text in `prediction`; the reader converts such a line (`_upgraded`), so nothing else ever decodes it.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

from pydantic import ValidationError

from giant.atomic import write_atomic
from giant.core import SetupCause, Status
from giant.errors import ConfigError
from giant.llm.types import TokenCounts
from giant.record.trajectory import Navigation

# Statuses beyond the episode's (giant.core.Status): decided by the runner, not the episode.
RunnerStatus = Literal["skipped", "unparseable", "runner_error"]
SKIPPED: Final = "skipped"  # missing slide with skip_missing=true: reported, never scored
UNPARSEABLE: Final = "unparseable"  # the episode answered but no label could be extracted
RUNNER_ERROR: Final = "runner_error"  # run_episode raised (a bug): recorded so nothing is lost
# Every status a results.jsonl line may hold: written by the runner and the re-score, read by all.
RecordStatus = Literal[Status, RunnerStatus]


class ResultRecord(TokenCounts):
    """One item-run. `label` is None for every failure; `correct` is then False."""

    key: str
    benchmark: str
    run_index: int
    seed: int
    prediction: str | None = None  # the model's answer text (None in patch mode)
    answers: list[str | None] | None = None  # patch mode: each patch's answer text, in patch order
    label: int | None = None
    method: str | None = None  # how the label was extracted
    patch_labels: list[int | None] | None = None  # patch mode: the label each patch gave (voted)
    truth: int
    correct: bool = False
    status: RecordStatus
    reason: str = ""
    cause: SetupCause | None = None  # set when the item-run failed for the setup, not the model
    calls: int = 0  # provider calls, failed ones included
    steps: int = 0  # actions executed (crops, notes, the answer)
    crops: int = 0
    dollars: float | None = 0.0  # None when the model had no price
    seconds: float = 0.0
    trajectory: str | None = None  # folder relative to the run's output directory
    # µm/px of each image the model was shown (overview, crops, patches), None where the slide does not
    # say; None for records written before it was recorded
    mpps: list[float | None] | None = None
    # Where the model looked, with evidence against the slide's annotations (giant.record.navigation);
    # None for item-runs without an episode and lines written before it was recorded
    navigation: Navigation | None = None
    # calls of each tool (agent.tools) the episode executed; None when it called none
    tool_calls: dict[str, int] | None = None

    @property
    def slot(self) -> tuple[str, int]:
        return (self.key, self.run_index)

    @property
    def answer_text(self) -> str:
        """The answer as one text for a reader: the answer, or in patch mode a line per patch."""
        if self.answers is None:
            return self.prediction or ""
        return "\n".join(
            f"patch {n}: {text if text is not None else '(no answer)'}"
            for n, text in enumerate(self.answers, 1)
        )


class ResultsWriter:
    """Appends records durably; one open handle for the whole run. Thread-safe, so the runner can
    fsync in a worker thread (an fsync takes milliseconds, up to tens on a busy disk) instead of
    stalling every running episode on the event loop."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()
        self.written: list[ResultRecord] = []  # the records appended, in the file's order

    def append(self, record: ResultRecord) -> None:
        line = record.model_dump_json() + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()
            os.fsync(self._file.fileno())
            self.written.append(record)

    def close(self) -> None:
        with self._lock:  # a cancelled run may still have a write in flight: let it land whole
            self._file.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def write_results(path: Path, records: Iterable[ResultRecord]) -> None:
    """The whole file at once, atomically: a resume that drops torn or retried lines, a re-score."""
    write_atomic(path, "".join(record.model_dump_json() + "\n" for record in records).encode())


def read_results(path: Path) -> list[ResultRecord]:
    """Every complete record, in file order; a torn last line (killed mid-write) is ignored.

    A bad line anywhere else means the file was edited or corrupted: that is an error, not something
    to skip silently, because dropping it would quietly re-run (and re-pay for) an item.
    """
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").split("\n")
    records = []
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            records.append(ResultRecord.model_validate(_upgraded(json.loads(text))))
        except (ValueError, ValidationError) as exc:
            is_last = all(not rest.strip() for rest in lines[number:])
            if is_last:
                break
            first = str(exc).splitlines()[0]
            raise ConfigError(
                f"{path} line {number}: not a result record ({first}); fix or remove it"
            ) from None
    return records


def _upgraded(line: Any) -> Any:
    """A line of an older job folder in today's form: patch mode (patch labels recorded) kept its
    patch answers as JSON text in `prediction`; they become `answers`, and the episode had no single
    answer. Today's lines and every non-patch line are returned as they are."""
    if not isinstance(line, dict) or "answers" in line or line.get("patch_labels") is None:
        return line
    prediction = line.get("prediction")
    if not isinstance(prediction, str):
        return line
    return {**line, "prediction": None, "answers": json.loads(prediction)}


def latest_by_slot(records: list[ResultRecord]) -> dict[tuple[str, int], ResultRecord]:
    """The last record of each (key, run_index): a retried item-run supersedes its earlier failure."""
    return {record.slot: record for record in records}
