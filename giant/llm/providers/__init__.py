"""Providers added beside the built-in ones (giant.llm.config): each module or package here registers
its settings model (`@register("provider")`, giant.registry) naming its provider class
(`implementation = "module:Class"`), and conf/provider/<name>.yaml holds its values; nothing else
names it. The registry imports this folder when the providers are first read, so keep a module's top
light (its SDK imported by the provider class's module, which is imported only when it is built)."""

from collections.abc import Mapping
from typing import Any

from giant.registry import members

# Every registered provider's settings model by name, the built-in ones first.
PROVIDERS: Mapping[str, Any] = members("provider")

__all__ = ["PROVIDERS"]
