"""A question of the dataset that cannot be scored as given, and what the loader did about it.

Its own small module because two layers carry it: the loader (giant.data.multipathqa) finds defects,
and summary.json (giant.record.summary) records them with the run they affect.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

Resolution = Literal["kept", "repaired", "dropped"]


class Defect(BaseModel):
    benchmark: str
    benchmark_id: str
    description: str
    resolution: Resolution = "kept"

    @property
    def key(self) -> str:
        """The affected item's key ("benchmark/benchmark_id", as `Item.key`)."""
        return f"{self.benchmark}/{self.benchmark_id}"
