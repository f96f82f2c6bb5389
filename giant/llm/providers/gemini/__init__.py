"""provider=gemini: Google's Gemini API through its own SDK, google-genai (docs/gemini.md).

This module holds the settings only, so reading the provider registry never loads the SDK: the
provider class (`provider.py`), its error causes (`errors.py`) and its Batch API rounds (`batch.py`)
are imported when a Gemini provider is built. Its values are in conf/provider/gemini.yaml.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from giant.llm.config import FlexSettings, _invalid
from giant.registry import register
from giant.roles import Method


@register("provider")
class GeminiSettings(FlexSettings):
    """Google's Gemini API through google-genai (the class in `provider.py`); flex as OpenAI's flex."""

    implementation = "giant.llm.providers.gemini.provider:GeminiProvider"
    name: Method[Literal["gemini"]] = Field(description="The provider; picking `provider=<name>` sets it.")
    key_fallbacks: ClassVar[dict[str, tuple[str, ...]]] = {
        "GEMINI_API_KEY": ("GOOGLE_API_KEY",)
    }  # as google-genai
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

    @model_validator(mode="after")
    def _one_thinking(self) -> GeminiSettings:
        if self.thinking_level is not None and self.thinking_budget is not None:
            raise _invalid(
                "provider.thinking_level (Gemini 3+) and provider.thinking_budget (Gemini 2.5) cannot "
                "both be set; set the other to null"
            )
        return self


__all__ = ["GeminiSettings"]
