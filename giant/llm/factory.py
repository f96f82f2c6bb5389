"""Build the provider a config names, and check its credentials before any item starts.

The registry is the settings models of giant.llm.config: each names its provider class as
"module:Class", imported here only when that provider is built or asked about, so a run with the
random provider never loads an SDK.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from giant.errors import ConfigError
from giant.llm.batch import BatchCollector
from giant.llm.batch_records import BATCHES_DIR, BatchBook
from giant.llm.config import BatchedSettings, ProviderConfig, ProviderSettings, SdkSettings, settings_class
from giant.llm.ledger import Ledger
from giant.llm.types import Provider, ProviderClass


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
    if not os.environ.get(cfg.api_key_env):
        raise ConfigError(
            f"provider={cfg.name}: environment variable {cfg.api_key_env} is unset or empty; "
            f"export {cfg.api_key_env}=... (or set provider.api_key_env to the variable holding the key)"
        )


def batch_collector(cfg: ProviderConfig, ledger: Ledger | None) -> BatchCollector | None:
    """The batch rounds of provider.batch=true (giant.llm.batch), recorded beside `ledger`: built by
    the run's caller and handed to both the provider (`build_provider`) and the runner, which tells
    it how many episodes run. None: each call is sent on its own."""
    if not isinstance(cfg, BatchedSettings) or not cfg.batch:
        return None
    if ledger is None:
        raise ConfigError(
            f"provider={cfg.name}: provider.batch=true records its batches beside the ledger; "
            "run it with a ledger"
        )
    return BatchCollector(
        BatchBook(Path(ledger.root) / BATCHES_DIR),
        max_requests=cfg.batch_max_requests,
        max_bytes=int(cfg.batch_max_mb * 1e6),
        wait_s=cfg.batch_wait_s,
        poll_s=cfg.batch_poll_s,
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
    `batches` (`batch_collector`) is handed only to a provider in batch mode, the one kind that takes it."""
    check_credentials(cfg)
    cls = provider_class(cfg.name)
    if batches is None:
        return cls(cfg, http_client=http_client, ledger=ledger)
    return cls(cfg, http_client=http_client, ledger=ledger, batches=batches)
