"""The top-level run keys of conf/config.yaml as the runner reads them: how many runs, which items,
the pacing and the scoring (`RunOptions.scoring`). giant.config validates them as the `run` part of
`RunSettings`; they live here, beside the runner, so the runner needs nothing from the config layer."""

from __future__ import annotations

from pydantic import Field, field_validator

from giant.eval.scoring_settings import ScoringSettings
from giant.roles import Data, Method, Operational, Repeats, Selection


class RunOptions(ScoringSettings):
    """The top-level run keys of conf/config.yaml (names kept stable for scripts and docs)."""

    seed: Method[int] = Field(description="Base seed: provider draws, patch and region sampling, bootstrap.")
    runs_per_item: Repeats[int] = Field(
        ge=1, le=100, description="k independent episodes per item, majority-voted (GIANT x5: 5)."
    )
    concurrency: Operational[int] = Field(ge=1, le=1024, description="Items in flight at once.")
    budget_usd: Operational[float | None] = Field(
        gt=0, description="Hard dollar cap of the run: each call reserves its expected cost first."
    )
    dry_run: Operational[bool] = Field(
        description="Load the data, open every slide and estimate the cost; no provider call."
    )
    limit: Selection[int | None] = Field(ge=1, description="Run the first N items only; null: all.")
    item_ids: Selection[list[str] | None] = Field(
        description="Only these items, as benchmark/benchmark_id or benchmark_id strings; null: all."
    )
    retry_failed: Operational[bool] = Field(
        description="On resume, also rerun the model's failures (setup failures are always rerun)."
    )
    # Which items are scored (a missing slide: skipped, or a failure).
    skip_missing: Data[bool] = Field(
        description="Missing slides are skipped and reported (true) or counted as failures (false)."
    )
    resume: Operational[bool] = Field(
        description="Rerunning the same config and data continues the earlier run; false: start afresh."
    )
    record_requests: Operational[bool] = Field(
        description="Save every provider request and response (images as hashes) beside each trajectory."
    )
    ledger: Operational[bool] = Field(
        description="Answer calls already paid for from the ledger in paths.cache_dir; false: fresh samples."
    )
    breaker_after: Operational[int] = Field(
        ge=1, description="Stop the run after this many item-runs in a row fail outside the model."
    )
    # Read by giant.cli.console's Hydra callback before the job starts; validated here like every key.
    verbose: Operational[bool] = Field(
        description="Show every library's INFO notes on the console too (a line per HTTP request, MLflow's); "
        "the job's log file has them either way."
    )

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
