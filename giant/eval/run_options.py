"""The top-level run keys of conf/config.yaml as the runner reads them: how many runs, which items,
the pacing and the scoring (`RunOptions.scoring`). giant.config validates them as the `run` part of
`RunSettings`; they live here, beside the runner, so the runner needs nothing from the config layer."""

from __future__ import annotations

from pydantic import Field, field_validator

from giant.eval.scoring_settings import ScoringSettings
from giant.roles import Data, Method, Operational, Repeats, Selection


class RunOptions(ScoringSettings):
    """The top-level run keys of conf/config.yaml (names kept stable for scripts and docs)."""

    seed: Method[int]
    runs_per_item: Repeats[int] = Field(ge=1, le=100)
    concurrency: Operational[int] = Field(ge=1, le=1024)
    budget_usd: Operational[float | None] = Field(gt=0)
    dry_run: Operational[bool]
    limit: Selection[int | None] = Field(ge=1)
    item_ids: Selection[list[str] | None]
    retry_failed: Operational[bool]
    skip_missing: Data[bool]  # which items are scored (a missing slide: skipped, or a failure)
    resume: Operational[bool]
    record_requests: Operational[bool]
    ledger: Operational[bool]  # paid calls answered from giant.llm.ledger; false: fresh samples
    breaker_after: Operational[int] = Field(ge=1)  # item-runs in a row failed outside the model: stop the run

    @field_validator("item_ids", mode="before")
    @classmethod
    def _ids_as_text(cls, value: object) -> object:
        """`item_ids=[tcga/12,40]`: Hydra parses the bare 40 as an int."""
        return [str(v) for v in value] if isinstance(value, list | tuple) else value

    @property
    def scoring(self) -> ScoringSettings:
        """The scoring part, as the scorers take it (one value, not its keys one by one)."""
        return ScoringSettings.model_validate(self.model_dump(include=set(ScoringSettings.model_fields)))


__all__ = ["RunOptions"]
