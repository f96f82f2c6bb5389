"""Provider settings, validated once from conf/provider/*.yaml (Hydra) into this model.

`crop_size` here is the per-provider default S (paper_facts §2: 1000 px for OpenAI-style models,
500 px for Claude, for image pricing); the conf layer interpolates it into `agent.crop_size`, and the
agent reads only `AgentConfig.crop_size`.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

ProviderName = Literal["openai", "anthropic", "openai_compatible", "random", "scripted"]
PROVIDER_NAMES: tuple[str, ...] = get_args(ProviderName)

DEFAULT_KEY_ENV: dict[str, str] = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
DEFAULT_CROP_SIZE: dict[str, int] = {"anthropic": 500}  # everything else: 1000


class ProviderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: ProviderName
    model: str = Field(min_length=1)  # free-form: any model string the endpoint accepts
    protocol: Literal["structured", "tools"] = "structured"
    base_url: str | None = None  # proxies, gateways, local servers (openai_compatible needs it)
    api_key_env: str | None = None  # None: OPENAI_API_KEY / ANTHROPIC_API_KEY by provider name
    crop_size: int = Field(0, ge=0, le=4096)  # 0: the provider's default (see module docstring)
    reasoning_effort: str | None = "high"  # OpenAI reasoning models; None leaves it unset
    thinking_budget: int | None = Field(1024, ge=1024)  # Anthropic extended thinking; None disables
    max_tokens: int | None = Field(None, ge=1)  # None: Anthropic 30000, others unset
    image_detail: Literal["high", "low", "auto"] = "high"
    max_retries: int = Field(2, ge=0, le=10)  # the SDK's own retry count; there is no second layer
    timeout_s: float = Field(600.0, gt=0)
    rpm: int | None = Field(None, ge=1)  # requests per minute, shared by all concurrent items
    tpm: int | None = Field(None, ge=1)  # tokens per minute (estimated per request)
    prompt_caching: bool = True
    pricing_file: str = "conf/pricing.yaml"
    json_schema: bool = True  # openai_compatible: the server supports response_format json_schema
    script: str | None = None  # scripted provider: JSONL of steps
    seed: int = 0  # random provider
    temperature: float | None = None  # the paper sets none

    @model_validator(mode="after")
    def _defaults_by_name(self) -> ProviderConfig:
        if self.crop_size == 0:
            self.crop_size = DEFAULT_CROP_SIZE.get(self.name, 1000)
        if self.api_key_env is None:
            self.api_key_env = DEFAULT_KEY_ENV.get(self.name)
        if self.max_tokens is None and self.name == "anthropic":
            self.max_tokens = 30000
        thinking = self.name == "anthropic" and self.thinking_budget is not None
        if thinking and self.max_tokens is not None and self.max_tokens <= (self.thinking_budget or 0):
            raise ValueError(
                f"provider.thinking_budget={self.thinking_budget} must be below "
                f"provider.max_tokens={self.max_tokens} (the API requires it)"
            )
        if thinking and self.temperature is not None:
            raise ValueError(
                "provider.temperature must be null while thinking is on (set thinking_budget=null)"
            )
        return self
