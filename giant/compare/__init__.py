"""Paired comparison of finished runs (scripts/compare.py): per task, the runs' common items, the
paired bootstrap interval of the difference, McNemar's exact test, the flipped items, and the files
and MLflow run that keep the result.

The public names are exported lazily (PEP 562): a comparison reads MLflow and numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from giant.compare.pairs import Comparison, PairResult, compare_runs
    from giant.compare.run import compare

__all__ = [
    "Comparison",
    "PairResult",
    "compare",
    "compare_runs",
]
_MODULES = {  # module (under giant.compare) -> the names it exports
    "run": ("compare",),
    "pairs": (
        "Comparison",
        "PairResult",
        "compare_runs",
    ),
}
_MODULE_OF = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    if (module := _MODULE_OF.get(name)) is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
