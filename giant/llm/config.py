"""Provider settings: one pydantic model per provider, picked by `name` (a discriminated union).

Every default lives in conf/provider/<name>.yaml (the file Hydra composes, the only place a user
reads them); the models here hold the constraints only, so a value never has two sources. Outside
Hydra, `provider_settings(name, **overrides)` reads the same YAML. A key that belongs to another
provider (`thinking_budget` on openai) is one line naming the providers that have it.

`crop_size` is read by the conf layer only: conf/agent/*.yaml interpolates it into `agent.crop_size`
(the per-provider S of paper_facts §2), and the agent reads only `AgentConfig.crop_size`.
The models here are the bases the providers share; each provider's own model is in its package,
giant/llm/providers/<name>/, registered (giant.registry, kind "provider") and naming its class as
`implementation` ("module:Class"): the class, and its SDK, are imported only when a provider is built
(giant.llm.factory). A new provider is a package there plus conf/provider/<name>.yaml.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from giant.errors import ConfigError
from giant.registry import members, owners, settings_union
from giant.roles import Method, Operational

# Every registered provider's settings model by name (giant/llm/providers/, in folder order).
PROVIDERS = members("provider")

if TYPE_CHECKING:
    from giant.llm.types import Tier

PROVIDER_CONF = Path(__file__).resolve().parents[2] / "conf" / "provider"


def _invalid(message: str) -> PydanticCustomError:
    """A check's message as it is (pydantic would prefix a ValueError with "Value error, ")."""
    return PydanticCustomError("provider_setting", message)


class ProviderSettings(BaseModel):
    """What every provider has."""

    model_config = ConfigDict(extra="forbid")
    implementation: ClassVar[str]  # "module:Class" of the provider, imported when it is built

    name: Method[str] = Field(description="The provider; picking `provider=<name>` sets it.")
    model: Method[str] = Field(min_length=1, description="The model, any name the endpoint accepts.")
    crop_size: Method[int | None] = Field(
        None, ge=1, le=4096, description="S for this provider's models; agent.crop_size interpolates it."
    )
    pricing_file: Operational[str] = Field(description="Prices per model in USD per million tokens.")

    def billed_tier(self) -> Tier:
        """The price tier this provider's calls are expected to be billed at: what the hard budget
        reserves at, so a batch or flex run is stopped by its own spend, not by twice its spend."""
        return "standard"


class SdkSettings(ProviderSettings):
    """What the three providers behind an HTTP API share."""

    protocol: Method[Literal["structured", "tools"]] = Field(
        description="structured: one strict-JSON step per call; tools: the authors' slide_zoom tools."
    )
    base_url: Operational[str | None] = Field(
        description="The API's address (a proxy, gateway or local server); null: the provider's own."
    )
    api_key_env: Operational[str | None] = Field(description="The environment variable holding the API key.")
    max_tokens: Method[int | None] = Field(ge=1, description="Output token limit per call; null: the API's.")
    temperature: Method[float | None] = Field(description="Sampling temperature; null sends none.")
    # Transient failures asked again (giant.llm.retry), the one layer.
    max_retries: Operational[int] = Field(
        ge=0, le=10, description="Retries of transient failures (rate limit, 5xx, connection), with backoff."
    )
    timeout_s: Operational[float | None] = Field(
        gt=0, description="Seconds per request; null: 600 (900 under OpenAI flex)."
    )
    rpm: Operational[int | None] = Field(
        ge=1, description="Requests per minute, shared by all concurrent items; null: no limit."
    )
    tpm: Operational[int | None] = Field(
        ge=1, description="Tokens per minute (estimated per request); null: no limit."
    )
    prompt_caching: Method[bool] = Field(description="Use the provider's prompt cache.")
    key_required: ClassVar[bool] = True  # False: a local server may need no key
    # Variables read after api_key_env when it is unset, as the provider's SDK itself would
    key_fallbacks: ClassVar[dict[str, tuple[str, ...]]] = {}

    def key_variables(self) -> tuple[str, ...]:
        """The variables the key is read from, in order: api_key_env, then its SDK's alternatives."""
        if not self.api_key_env:
            return ()
        return (self.api_key_env, *self.key_fallbacks.get(self.api_key_env, ()))

    def api_key(self) -> str:
        """The key from the first of `key_variables` that is set ("" when none is)."""
        return next((key for name in self.key_variables() if (key := os.environ.get(name, ""))), "")

    def client_timeout_s(self) -> float:
        """The SDK client's timeout for one request: timeout_s, else the SDKs' own 10 minutes."""
        return STANDARD_TIMEOUT_S if self.timeout_s is None else self.timeout_s


STANDARD_TIMEOUT_S = 600.0  # the openai and anthropic SDKs' own default
FLEX_TIMEOUT_S = 900.0  # OpenAI's advice for flex processing, whose replies queue for capacity


class BatchedSettings(SdkSettings):
    """The providers with a batch API (openai, anthropic): `batch=true` sends every call through it,
    half price, replies within 24 h (giant.llm.batch gathers each step round into one batch)."""

    batch: Operational[bool] = Field(
        description="true: every call goes through the batch API, half price, one batch per step round."
    )
    batch_max_requests: Operational[int] = Field(
        ge=1, le=100_000, description="A batch is submitted once it holds this many requests."
    )
    batch_max_mb: Operational[float] = Field(
        gt=0, description="Or once its requests reach this many MB (the APIs' file limits)."
    )
    batch_wait_s: Operational[float] = Field(
        gt=0, description="Or this many seconds after its first request was queued."
    )
    batch_poll_s: Operational[float] = Field(
        gt=0, description="The first pause between polls of a batch in flight; it grows tenfold."
    )

    def billed_tier(self) -> Tier:
        return "batch" if self.batch else super().billed_tier()

    @model_validator(mode="after")
    def _one_discount(self) -> BatchedSettings:
        if self.batch and getattr(self, "service_tier", "standard") != "standard":
            raise _invalid(
                "provider.batch=true and provider.service_tier=flex are two ways to the same discount; "
                "pick one"
            )
        return self


class FlexSettings(BatchedSettings):
    """A provider with a synchronous flex tier (OpenAI's flex processing, Gemini's flex): the same
    model for half the price, slower, and turned away under load."""

    # The price tier, not the answer: the same model answers, slower and for half the price under flex.
    service_tier: Operational[Literal["standard", "flex"]] = Field(
        description="standard, or flex: the provider's flex tier, half price, slower, may be turned away."
    )
    # Flex calls turned away for capacity (OpenAI's 429 "resource unavailable", Gemini's 503) asked
    # again, apart from max_retries; then flex_fallback decides.
    flex_retries: Operational[int] = Field(
        ge=0, le=100, description="Retries of flex calls turned away for capacity, apart from max_retries."
    )
    flex_fallback: Operational[Literal["wait", "standard"]] = Field(
        description="After flex_retries: standard sends the call at the standard tier; wait keeps asking."
    )

    def billed_tier(self) -> Tier:
        """Flex, when a call short of flex capacity keeps waiting for it; with flex_fallback=standard
        a call may be billed at the standard tier, so the budget reserves at that price."""
        if self.service_tier == "flex" and self.flex_fallback == "wait":
            return "flex"
        return super().billed_tier()

    def client_timeout_s(self) -> float:
        """timeout_s when set; else 10 minutes, or 15 under flex, whose replies wait longer."""
        if self.timeout_s is not None:
            return self.timeout_s
        return FLEX_TIMEOUT_S if self.service_tier == "flex" else STANDARD_TIMEOUT_S


def provider_names() -> tuple[str, ...]:
    """Every provider: each package in giant/llm/providers/ (giant.registry). Read when asked, never
    frozen at import: a provider package imported first imports this module before it has registered
    itself, so a tuple built here would miss it."""
    return tuple(PROVIDERS)


def settings_class(name: str) -> type[ProviderSettings]:
    """The settings model of a provider name; an unknown name is one line listing the known ones."""
    if name not in PROVIDERS:
        raise ConfigError(f"provider={name} is unknown; use one of {', '.join(PROVIDERS)}")
    return PROVIDERS[name]


def providers_with(key: str) -> list[str]:
    """The providers that have a setting, for the one-line error about a key of another provider."""
    return owners("provider", key)


def _check_keys(data: Any) -> Any:
    """An unknown name, or a key of another provider, as one line before the member model runs."""
    if not isinstance(data, dict):
        return data
    name = data.get("name")
    if name not in PROVIDERS:
        raise PydanticCustomError(
            "provider_name",
            "provider={name} is unknown; use one of {names}",
            {"name": str(name), "names": ", ".join(PROVIDERS)},
        )
    fields = settings_class(str(name)).model_fields
    for key in data:
        if key not in fields:
            owners = providers_with(key)
            where = (
                f"only {', '.join(owners)} {'has' if len(owners) == 1 else 'have'} it"
                if owners
                else "no provider has it"
            )
            raise PydanticCustomError(
                "provider_key",
                "{key} is not a setting of provider={name} ({where}); remove it",
                {"key": key, "name": name, "where": where},
            )
    return data


if TYPE_CHECKING:
    ProviderConfig = ProviderSettings
else:
    ProviderConfig = Annotated[settings_union("provider", "name"), BeforeValidator(_check_keys)]
_ADAPTER: TypeAdapter[ProviderConfig] = TypeAdapter(ProviderConfig)


def validate_provider(data: dict[str, Any]) -> ProviderConfig:
    """Plain data -> the provider's settings model; a bad value is one ConfigError line."""
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(["provider", *(str(part) for part in error["loc"][1:])])
        value = error.get("input")
        shown = "" if isinstance(value, dict) else f"={value}"
        raise ConfigError(f"{where}{shown}: {error['msg']}") from None


def provider_settings(name: str, **overrides: Any) -> ProviderConfig:
    """A provider's settings with the defaults of conf/provider/<name>.yaml, outside Hydra (library
    use, tests): the same file the CLI composes, so a default has one source."""
    settings_class(name)  # an unknown name fails here, not as a missing file
    yaml = OmegaConf.load(PROVIDER_CONF / f"{name}.yaml")
    root = {"paths": {"root": str(PROVIDER_CONF.parents[1])}, "seed": 0, "provider": yaml}
    cfg = OmegaConf.merge(OmegaConf.create(root), {"provider": overrides})
    try:
        data = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None) or "a value"
        raise ConfigError(f"{key} is required: pass it to provider_settings({name!r}, ...)") from None
    assert isinstance(data, dict)
    return validate_provider(data["provider"])
