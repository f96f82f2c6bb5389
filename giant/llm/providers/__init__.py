"""The providers: each package here is one (`provider=<name>`), holding its settings model in its
`__init__` (registered with `@register("provider")`, giant.registry, and naming its provider class as
`implementation = "module:Class"`), the class in `provider.py`, and its errors and batch rounds
beside it where the API has its own; conf/provider/<name>.yaml holds its values, and nothing else
names it. The registry imports this folder when the providers are first read, so keep a package's
`__init__` light (its SDK imported by the provider class's module, which is imported only when it is
built). The bases they share are in giant.llm (config, sdk_provider, sdk_errors, batch).
"""

# The providers' shared settings module (its PROVIDERS is every provider), imported with this
# package: a provider package imported first (`import giant.llm.providers.gemini`) then meets the
# settings union giant.llm.config builds already whole, instead of being half-imported while the
# union is built (and left out of it).
from giant.llm.config import PROVIDERS

__all__ = ["PROVIDERS"]
