"""The final table of a fetch: per task, fetched / already present / failed and bytes moved, then
each failure with its reason (the URL and slide are in it), so a rerun can be judged at a glance."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from giant.data.check import human_bytes
from giant.data.fetch.plan import per_task

Status = Literal["fetched", "present", "failed"]


class Outcome(BaseModel):
    image_path: str
    tasks: list[str]
    status: Status
    bytes: int = 0  # bytes of the file now in place (fetched ones only)
    reason: str = ""


class FetchReport(BaseModel):
    outcomes: list[Outcome]

    @property
    def ok(self) -> bool:
        """Every requested slide is present or was fetched and verified."""
        return all(o.status != "failed" for o in self.outcomes)

    def render(self) -> str:
        lines = [
            "| task | slides | fetched | already present | failed | bytes fetched |",
            "|---|---|---|---|---|---|",
        ]
        for task, outcomes in per_task(self.outcomes):
            count = {s: sum(o.status == s for o in outcomes) for s in ("fetched", "present", "failed")}
            moved = human_bytes(sum(o.bytes for o in outcomes))
            lines.append(
                f"| {task} | {len(outcomes)} | {count['fetched']} | {count['present']} | {count['failed']} "
                f"| {moved} |"
            )
        lines += [f"failed: {o.image_path}: {o.reason}" for o in self.outcomes if o.status == "failed"]
        return "\n".join(lines)
