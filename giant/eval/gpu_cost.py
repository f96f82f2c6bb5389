"""What a run on its own GPUs cost: no server bills tokens, but the GPUs were held while it ran.

The cost is the run's active time x `provider.gpus` x `provider.gpu_hour_usd`. Active time is the
wall time of the run (from its first item to its summary), not the sum of call latencies: concurrent
calls overlap, and the GPUs are held while any is in flight. A resumed run adds the active time of the
invocations before it (read from the summary.json it resumes), as its cost adds their calls' dollars.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from giant.llm.config import ProviderConfig
from giant.llm.providers.openai_compatible import OpenAICompatibleSettings
from giant.record import read_summary

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class GpuRate:
    """Dollars per second of a run: the server's GPUs at their hourly price."""

    gpus: int
    gpu_hour_usd: float

    @classmethod
    def of(cls, provider: ProviderConfig) -> GpuRate | None:
        """The provider's GPU price, if it runs on GPUs a user priced (openai_compatible only)."""
        if isinstance(provider, OpenAICompatibleSettings) and provider.gpu_hour_usd is not None:
            return cls(gpus=provider.gpus, gpu_hour_usd=provider.gpu_hour_usd)
        return None

    def cost(self, active_s: float) -> float:
        return active_s * self.gpus * self.gpu_hour_usd / SECONDS_PER_HOUR


def earlier_active_s(resume_from: Path | None) -> float:
    """The active seconds of the run being resumed; 0 without one, or when it left no readable
    summary.json (killed outright: its time is then not counted, which undercounts, never doubles)."""
    if resume_from is None:
        return 0.0
    try:
        return read_summary(resume_from).totals.active_s
    except (OSError, ValidationError):
        return 0.0
