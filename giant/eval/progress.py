"""The run's progress bar: item-runs done (resumed ones included), failures, dollars spent, ETA, and
in batch mode the round in flight (an item-run takes as many batch rounds as it has steps, each up to
hours: without it the bar stands still with no sign of why)."""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType

from tqdm import tqdm

from giant.record import SKIPPED, ResultRecord


def is_failure(record: ResultRecord) -> bool:
    """Anything but an extracted answer; skipped item-runs are not failures (they are not scored)."""
    return record.label is None and record.status != SKIPPED


class Progress:
    def __init__(self, *, total: int, done: Sequence[ResultRecord], enabled: bool) -> None:
        self.failures = sum(is_failure(record) for record in done)
        self.dollars = sum(record.dollars or 0.0 for record in done)
        self.ran = 0  # item-runs finished by this invocation
        self.batch = ""  # the batch round in flight (giant.llm.batch.BatchCollector.progress)
        self._bar = tqdm(
            total=total, initial=len(done), unit="item-run", disable=not enabled, dynamic_ncols=True
        )
        self._show()

    def update(self, record: ResultRecord) -> None:
        self.ran += 1
        self.failures += is_failure(record)
        self.dollars += record.dollars or 0.0
        self._bar.update(1)
        self._show()

    def note_batch(self, text: str) -> None:
        """The batch rounds changed: a round submitted, polled or ended."""
        self.batch = text
        self._show(refresh=True)

    def _show(self, *, refresh: bool = False) -> None:
        batch = f" {self.batch}" if self.batch else ""
        self._bar.set_postfix_str(
            f"failures={self.failures} spent=${self.dollars:.2f}{batch}", refresh=refresh
        )

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._bar.close()
