"""The paper's tables and figures, rebuilt from logged MLflow runs.

Runs are read back by the tag and metric names of giant.tracking.names, so a table can be rebuilt at
any time from the store alone (no output folders needed), and a "report" run keeps the rendered files
beside the runs they summarise. One module per job:

- `rows`: `RunRecord` (one finished job), row keys, `build_table` (the newest run of each row and task)
- `load`: `load_runs`, job runs read back from MLflow
- `formats`: markdown, LaTeX, CSV and the cost table
- `versus_paper`: our rows beside the published ones (giant.tracking.published)
- `figures`: metric vs T, metric vs thumbnail size
- `report`: all of them written to a folder and logged as a "report" run

The names below are exported lazily (PEP 562), so importing one module does not pull in MLflow or
matplotlib.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from giant.tracking.tables.figures import scaling_figure, thumbnail_figure
    from giant.tracking.tables.formats import (
        cells_csv,
        cost_markdown,
        latex_escape,
        to_csv,
        to_latex,
        to_markdown,
    )
    from giant.tracking.tables.load import load_runs
    from giant.tracking.tables.report import Report, log_report, write_report
    from giant.tracking.tables.rows import (
        MISSING,
        Cell,
        Row,
        RunRecord,
        Table,
        build_table,
        latest_per_row_and_task,
        task_columns,
    )
    from giant.tracking.tables.versus_paper import comparison_markdown, published_markdown

__all__ = [
    "MISSING",
    "Cell",
    "Report",
    "Row",
    "RunRecord",
    "Table",
    "build_table",
    "cells_csv",
    "comparison_markdown",
    "cost_markdown",
    "latest_per_row_and_task",
    "latex_escape",
    "load_runs",
    "log_report",
    "published_markdown",
    "scaling_figure",
    "task_columns",
    "thumbnail_figure",
    "to_csv",
    "to_latex",
    "to_markdown",
    "write_report",
]
_MODULES = {  # module (under giant.tracking.tables) -> the names it exports
    "rows": (
        "MISSING",
        "Cell",
        "Row",
        "RunRecord",
        "Table",
        "build_table",
        "latest_per_row_and_task",
        "task_columns",
    ),
    "load": ("load_runs",),
    "formats": ("cells_csv", "cost_markdown", "latex_escape", "to_csv", "to_latex", "to_markdown"),
    "versus_paper": ("comparison_markdown", "published_markdown"),
    "figures": ("scaling_figure", "thumbnail_figure"),
    "report": ("Report", "log_report", "write_report"),
}
_MODULE_OF = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    if (module := _MODULE_OF.get(name)) is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
