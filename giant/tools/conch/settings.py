"""The CONCH tool's settings (`tools.conch.*`, defaults in conf/tools/conch.yaml): types and checks only."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from giant.roles import Method, Operational

HYPOTHESES_CAP = 16  # the most hypotheses one conch call may send (tools.conch.max_hypotheses <= this)


class ConchSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # "tiny-random" (a small random model built in code), a checkpoint file, or a Hugging Face repo id
    weights: Method[str] = Field(
        min_length=1,
        description="tiny-random (built in code), a checkpoint file, or a Hugging Face repo id (gated).",
    )
    tokenizer: Method[Path | None] = Field(
        description="CONCH's tokenizer JSON; null: beside the checkpoint, or from the repo."
    )
    max_hypotheses: Method[int] = Field(
        ge=1, le=HYPOTHESES_CAP, description="The most text hypotheses one conch call may score."
    )
    device: Operational[str] = Field(
        pattern=r"^(auto|cpu|cuda(:\d+)?|mps)$",
        description="Where the model runs: auto (a GPU when there is one), cpu, cuda, cuda:N or mps.",
    )
    hf_token_env: Operational[str] = Field(
        min_length=1, description="The environment variable holding your Hugging Face token (never logged)."
    )
    seed: Method[int] = Field(description="Seed of the tiny-random model's weights.")
