"""The run's progress bar: item-runs done (resumed ones included), failures, dollars spent, ETA."""

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

    def _show(self) -> None:
        self._bar.set_postfix_str(f"failures={self.failures} spent=${self.dollars:.2f}", refresh=False)

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._bar.close()
