"""The `fetch:` block of conf/fetch.yaml, validated once (its values live in that file only)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class FetchSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    gdc_url: str = Field(min_length=1)  # the fetcher appends /files/<file_id> and /data/<file_id>
    gtex_url: str = Field(min_length=1)  # the fetcher appends /<sample id>
    concurrency: int = Field(ge=1, le=64)
    retries: int = Field(ge=0, le=100)  # per slide: 408, 429, 5xx, timeouts and dropped connections
    backoff_s: float = Field(ge=0)  # the first wait is drawn up to this; the window doubles each time
    backoff_max_s: float = Field(ge=0)
    backoff_min_s: float = Field(ge=0)  # no retry sooner than this, Retry-After included
    timeout_s: float = Field(gt=0)  # connect and between two reads, not for the whole file
    estimate_bytes: dict[str, int]  # typical slide size per source that reports none (gtex, kaggle)

    @field_validator("gdc_url", "gtex_url")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")
