"""provider=gemini: Google's Gemini API through its own SDK, google-genai (docs/gemini.md).

This module holds the settings only, so reading the provider registry never loads the SDK: the
provider class (`provider.py`), its error causes (`errors.py`) and its Batch API rounds (`batch.py`)
are imported when a Gemini provider is built. Its values are in conf/provider/gemini.yaml.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from giant.llm.config import FLEX_TIMEOUT_S, STANDARD_TIMEOUT_S, BatchedSettings, _invalid
from giant.registry import register
from giant.roles import Method, Operational

if TYPE_CHECKING:
    from giant.llm.types import Tier


@register("provider")
class GeminiSettings(BatchedSettings):
    """Google's Gemini API through google-genai (the class in `provider.py`); flex as OpenAI's flex."""

    implementation = "giant.llm.providers.gemini.provider:GeminiProvider"
    name: Method[Literal["gemini"]] = Field(description="The provider; picking `provider=<name>` sets it.")
    # Gemini 3+ takes a level, 2.5 a token budget; the API refuses both in one request.
    thinking_level: Method[Literal["minimal", "low", "medium", "high"] | None] = Field(
        description="Gemini 3+ thinking level; null sends none (the model's default)."
    )
    thinking_budget: Method[int | None] = Field(
        ge=-1, description="Gemini 2.5 thinking tokens (0 off, -1 dynamic); null sends none."
    )
    # Tokens per image part (Gemini 3: low 280, medium 560, high 1120): what the model sees, so a method.
    media_resolution: Method[Literal["low", "medium", "high", "ultra_high"] | None] = Field(
        description="media_resolution of every image part; null: the model's default."
    )
    service_tier: Operational[Literal["standard", "flex"]] = Field(
        description="standard, or flex: Gemini's flex tier, half price, may be shed under load."
    )
    flex_retries: Operational[int] = Field(
        ge=0, le=100, description="Retries of a flex call the server shed (503), apart from max_retries."
    )
    flex_fallback: Operational[Literal["wait", "standard"]] = Field(
        description="After flex_retries: standard sends the call at the standard tier; wait keeps asking."
    )

    def billed_tier(self) -> Tier:
        if self.service_tier == "flex" and self.flex_fallback == "wait":
            return "flex"
        return super().billed_tier()

    def client_timeout_s(self) -> float:
        if self.timeout_s is not None:
            return self.timeout_s
        return FLEX_TIMEOUT_S if self.service_tier == "flex" else STANDARD_TIMEOUT_S

    @model_validator(mode="after")
    def _one_thinking(self) -> GeminiSettings:
        if self.thinking_level is not None and self.thinking_budget is not None:
            raise _invalid(
                "provider.thinking_level (Gemini 3+) and provider.thinking_budget (Gemini 2.5) cannot "
                "both be set; set the other to null"
            )
        return self


__all__ = ["GeminiSettings"]
