"""provider=openai: OpenAI's Responses API (the class in `provider.py`, its flex tier in `flex.py`,
its Batch API in `batch.py`, its errors giant.llm.sdk_errors); values in conf/provider/openai.yaml."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from giant.llm.config import FlexSettings
from giant.registry import register
from giant.roles import Method, Operational


@register("provider")
class OpenAISettings(FlexSettings):
    implementation = "giant.llm.providers.openai.provider:OpenAIProvider"
    name: Method[Literal["openai"]] = Field(description="The provider; picking `provider=<name>` sets it.")
    reasoning_effort: Method[str | None] = Field(
        description="Reasoning effort, with encrypted reasoning re-sent in later steps; null: neither."
    )
    image_detail: Method[Literal["high", "low", "auto"]] = Field(description="The image detail level sent.")
    # How long OpenAI keeps the prompt cache (the request's prompt_cache_retention): billing, not the
    # answer. None sends nothing (the server's default); auto sends "24h" in batch mode only, for a
    # model OpenAI extends retention for (giant.llm.caching.openai_retention); the others as given.
    prompt_cache_retention: Operational[Literal["auto", "in_memory", "24h"] | None] = Field(
        description="How long OpenAI keeps the prompt cache; auto: 24h in batch mode where the model "
        "takes it; null: the server's default."
    )


__all__ = ["OpenAISettings"]
