"""provider=openai: OpenAI's Responses API through the openai SDK.

This module holds the settings only, so reading the provider registry never loads the SDK: the
provider class (`provider.py`), its flex tier (`flex.py`) and its Batch API rounds (`batch.py`) are
imported when an OpenAI provider is built; its errors are the shared SDK errors (giant.llm.sdk_errors).
Its values are in conf/provider/openai.yaml.
"""

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
