"""Fetch the MultiPathQA slides from their public sources into `<wsi_root>/<image_path>`.

TCGA slides come from the GDC API, GTEx slides from the GTEx histology image service and PANDA slides
from Kaggle. `plan.py` decides what is missing and how large it is before any byte moves,
`download.py` moves the bytes (resumable, verified, atomic), `run.py` runs the transfers
concurrently and `report.py` prints what happened. scripts/fetch_slides.py is the CLI (through
giant.fetch_job).

The public names are exported lazily (PEP 562): they pull the HTTP client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from giant.data.fetch.plan import Plan, build_plan
    from giant.data.fetch.run import http_client, run_plan
    from giant.data.fetch.settings import FetchSettings

__all__ = [
    "FetchSettings",
    "Plan",
    "build_plan",
    "http_client",
    "run_plan",
]
_MODULES = {  # module (under giant.data.fetch) -> the names it exports
    "settings": ("FetchSettings",),
    "plan": (
        "Plan",
        "build_plan",
    ),
    "run": (
        "http_client",
        "run_plan",
    ),
}
_MODULE_OF = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    if (module := _MODULE_OF.get(name)) is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
