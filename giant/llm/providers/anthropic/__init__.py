"""provider=anthropic: Anthropic's Messages API (the class in `provider.py`, its Message Batches in
`batch.py`, its errors giant.llm.sdk_errors); values in conf/provider/anthropic.yaml."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from giant.llm.config import BatchedSettings, _invalid
from giant.registry import register
from giant.roles import Method, Operational


@register("provider")
class AnthropicSettings(BatchedSettings):
    implementation = "giant.llm.providers.anthropic.provider:AnthropicProvider"
    name: Method[Literal["anthropic"]] = Field(description="The provider; picking `provider=<name>` sets it.")
    max_tokens: Method[int] = Field(
        ge=1, description="Output token limit per call (the Messages API requires one)."
    )
    thinking_budget: Method[int | None] = Field(
        ge=1024, description="Extended thinking tokens, below max_tokens; null disables thinking."
    )
    # The cache breakpoints' lifetime in batch mode, where rounds are minutes to hours apart and a
    # 5-minute entry is gone before the next round reads it; a 1-hour write costs 2x input, not 1.25x.
    # Synchronous calls follow each other within seconds and always write 5-minute entries.
    cache_ttl: Operational[Literal["5m", "1h"]] = Field(
        description="Lifetime of the cache breakpoints in batch mode (1h outlives the pause between rounds)."
    )

    @model_validator(mode="after")
    def _thinking_limits(self) -> AnthropicSettings:
        if self.thinking_budget is None:
            return self
        if self.max_tokens <= self.thinking_budget:
            raise _invalid(
                f"provider.thinking_budget={self.thinking_budget} must be below provider.max_tokens="
                f"{self.max_tokens} (the API requires it); lower the budget or raise max_tokens"
            )
        if self.temperature is not None:
            raise _invalid(
                "provider.temperature must be null while thinking is on "
                "(set provider.temperature=null or provider.thinking_budget=null)"
            )
        return self


__all__ = ["AnthropicSettings"]
