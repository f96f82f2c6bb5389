"""Build the provider a config names, and check its credentials before any item starts.

The registry is the providers' settings models (giant/llm/providers/): each names its class as
"module:Class", imported here only when that provider is built or asked about, so a run with the
random provider never loads an SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from giant.errors import ConfigError
from giant.llm.config import ProviderConfig, ProviderSettings, SdkSettings, settings_class
from giant.llm.ledger import Ledger
from giant.llm.types import Provider, ProviderClass

if TYPE_CHECKING:  # the batch module loads the SDKs' error classes: not for the offline providers
    from giant.llm.batch import BatchCollector


def provider_class(name: str) -> ProviderClass:
    """The class registered under a provider name (unknown: one line listing the names)."""
    module, _, attr = settings_class(name).implementation.partition(":")
    cls: ProviderClass = getattr(importlib.import_module(module), attr)
    return cls


def check_credentials(cfg: ProviderSettings) -> None:
    """Fail fast with one line naming the variable: a run must not die at item 37 on a missing key."""
    if not isinstance(cfg, SdkSettings):
        return  # offline providers
    if cfg.api_key_env is None and not cfg.key_required:
        return  # local servers (vLLM, Ollama, ...) usually need no key
    if not cfg.api_key_env:
        raise ConfigError(f"provider={cfg.name}: provider.api_key_env is empty; name the key variable")
    if not cfg.api_key():
        names = " or ".join(cfg.key_variables())
        raise ConfigError(
            f"provider={cfg.name}: environment variable {names} is unset or empty; "
            f"export {cfg.api_key_env}=... (or set provider.api_key_env to the variable holding the key)"
        )


def build_provider(
    cfg: ProviderConfig,
    *,
    http_client: Any = None,
    ledger: Ledger | None = None,
    batches: BatchCollector | None = None,
) -> Provider:
    """`http_client` (an httpx2.AsyncClient) lets tests drive the real SDKs through a mock transport.
    `ledger` keeps (and replays) the paid replies of the SDK providers; the offline ones cost nothing.
    `batches` (giant.llm.batch.batch_collector) is handed only to a provider in batch mode, the one
    kind that takes it."""
    check_credentials(cfg)
    cls = provider_class(cfg.name)
    if batches is None:
        return cls(cfg, http_client=http_client, ledger=ledger)
    return cls(cfg, http_client=http_client, ledger=ledger, batches=batches)
