"""The `fetch:` block of conf/fetch.yaml, validated once (its values live in that file only)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class FetchSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    gdc_url: str = Field(
        min_length=1,
        description="GDC API root: `/files/<file_id>` (size, md5) and `/data/<file_id>` (bytes).",
    )
    gtex_url: str = Field(
        min_length=1, description="GTEx histology image service; `/<sample id>` is appended."
    )
    kaggle_url: str = Field(
        min_length=1, description="Kaggle's API root: the competition's file list and files (label masks)."
    )
    concurrency: int = Field(ge=1, le=64, description="Slides downloaded at once.")
    retries: int = Field(
        ge=0, le=100, description="Retries per slide: 408, 429, 5xx, timeouts and dropped connections."
    )
    backoff_s: float = Field(
        ge=0, description="The first wait is drawn at random up to this; the window doubles each time."
    )
    backoff_max_s: float = Field(ge=0, description="The longest wait between two tries.")
    backoff_min_s: float = Field(
        ge=0, description="No retry sooner than this; a Retry-After replaces the draw."
    )
    timeout_s: float = Field(
        gt=0, description="Seconds to connect, and the longest silence while reading (not the whole file)."
    )
    estimate_bytes: dict[str, int] = Field(
        description="Typical slide size per source that reports none before the download (gtex, kaggle)."
    )

    @field_validator("gdc_url", "gtex_url", "kaggle_url")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")
