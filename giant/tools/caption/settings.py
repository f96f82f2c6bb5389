"""The caption tool's settings (`tools.caption.*`, values in conf/tools/caption.yaml): types and checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from giant.roles import Method, Operational


class CaptionSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: Method[str] = Field(
        min_length=1, description="The captioner's provider (a conf/provider/ name), e.g. openai_compatible."
    )
    options: Method[dict[str, Any]] = Field(
        description="Its settings over conf/provider/<provider>.yaml's (model, base_url, flex; no batch)."
    )
    size: Method[int] = Field(
        ge=64, le=4096, description="Long side (px) of the region sent to the captioner."
    )
    system: Method[str] = Field(min_length=1, description="The captioner's system prompt.")
    prompt: Method[str] = Field(
        min_length=1,
        description="The request sent with the region; {microns} is its width in µm, {mpp} its µm/px.",
    )
    budget_usd: Method[float | None] = Field(
        ge=0, description="The most the captioner may spend on one item (null: no cap of its own)."
    )
    ledger: Operational[bool] = Field(
        description="Replay captions already paid for from the ledger (false: fresh samples, still kept)."
    )
    ledger_dir: Operational[Path] = Field(description="Where the captioner's paid calls are kept.")
