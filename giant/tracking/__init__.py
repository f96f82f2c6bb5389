"""MLflow tracking, the paper's tables, and the trajectory viewer.

`names` holds every MLflow tag and metric name that writers, readers and tests share; `tables` (a
package) rebuilds the paper's tables and figures from logged runs. The public names are exported
lazily (PEP 562): they pull MLflow.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from giant.tracking.mlflow_logger import JobRun, SweepInfo, open_experiment, tracked
    from giant.tracking.published import published_row_for
    from giant.tracking.traces import log_traces
    from giant.tracking.viewer import write_html, write_job_pages

__all__ = [
    "JobRun",
    "SweepInfo",
    "log_traces",
    "open_experiment",
    "published_row_for",
    "tracked",
    "write_html",
    "write_job_pages",
]
_MODULES = {  # module (under giant.tracking) -> the names it exports
    "mlflow_logger": (
        "JobRun",
        "SweepInfo",
        "open_experiment",
        "tracked",
    ),
    "traces": ("log_traces",),
    "viewer": (
        "write_html",
        "write_job_pages",
    ),
    "published": ("published_row_for",),
}
_MODULE_OF = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    if (module := _MODULE_OF.get(name)) is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
