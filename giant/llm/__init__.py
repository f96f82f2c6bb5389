"""Model providers behind one async protocol, with pricing, rate limits and the call ledger.

The public names are exported lazily (PEP 562): `giant.llm.types` and `giant.llm.config` are light
contracts that the config layer imports, and importing the package must not load the providers' SDKs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from giant.llm.config import ProviderConfig, ProviderSettings
    from giant.llm.factory import build_provider, check_credentials
    from giant.llm.ledger import Ledger
    from giant.llm.pricing import Pricing
    from giant.llm.types import (
        CallContext,
        Conversation,
        FatalProviderError,
        ModelTurn,
        Provider,
        ProviderError,
        TokenCounts,
        Usage,
    )

__all__ = [
    "CallContext",
    "Conversation",
    "FatalProviderError",
    "Ledger",
    "ModelTurn",
    "Pricing",
    "Provider",
    "ProviderConfig",
    "ProviderError",
    "ProviderSettings",
    "TokenCounts",
    "Usage",
    "build_provider",
    "check_credentials",
]
_MODULES = {  # module (under giant.llm) -> the names it exports
    "types": (
        "CallContext",
        "Conversation",
        "FatalProviderError",
        "ModelTurn",
        "Provider",
        "ProviderError",
        "TokenCounts",
        "Usage",
    ),
    "config": (
        "ProviderConfig",
        "ProviderSettings",
    ),
    "factory": (
        "build_provider",
        "check_credentials",
    ),
    "pricing": ("Pricing",),
    "ledger": ("Ledger",),
}
_MODULE_OF = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    if (module := _MODULE_OF.get(name)) is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
