"""Providers added beside the built-in ones (giant.llm.config): each module or package here registers
its settings model (`@register("provider")`, giant.registry) naming its provider class
(`implementation = "module:Class"`), and conf/provider/<name>.yaml holds its values; nothing else
names it. The registry imports this folder when the providers are first read, so keep a module's top
light (its SDK imported by the provider class's module, which is imported only when it is built)."""

# The built-in providers' module (its PROVIDERS is every provider), imported with this package: a
# provider package imported first (`import giant.llm.providers.gemini`) then meets the settings union
# giant.llm.config builds already whole, instead of being half-imported while the union is built (and
# left out of it).
from giant.llm.config import PROVIDERS

__all__ = ["PROVIDERS"]
