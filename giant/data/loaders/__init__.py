"""Every dataset loader, registered: a module here with a `@register("loader")` `Loader` subclass
(giant.data.loaders.base: the contract) is found by the registry (giant.registry) the first time the
loaders are read; `dataset.source` names the one a job's questions come through (conf/dataset/<name>.yaml
sets it; docs/ARCHITECTURE.md, "Adding a dataset loader")."""

from giant.data.loaders.base import LOADERS, DatasetFields, Loaded, Loader

__all__ = ["LOADERS", "DatasetFields", "Loaded", "Loader"]
