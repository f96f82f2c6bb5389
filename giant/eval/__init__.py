"""Scoring: answer extraction, metrics, bootstrap, voting, and the batch runner.

The public names are exported lazily (PEP 562): the runner pulls the agent, the providers and
OpenSlide, while `giant.eval.run_options` and `giant.eval.scoring_settings` are light settings models
that giant.config imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from giant.eval.dryrun import dry_run
    from giant.eval.items import JobData
    from giant.eval.metrics import score
    from giant.eval.resume import ResumeIndex
    from giant.eval.run_options import RunOptions
    from giant.eval.runner import RunServices, run_eval
    from giant.eval.scoring import score_trajectory
    from giant.eval.voting import majority_vote

__all__ = [
    "JobData",
    "ResumeIndex",
    "RunOptions",
    "RunServices",
    "dry_run",
    "majority_vote",
    "run_eval",
    "score",
    "score_trajectory",
]
_MODULES = {  # module (under giant.eval) -> the names it exports
    "items": ("JobData",),
    "runner": ("RunServices", "run_eval"),
    "run_options": ("RunOptions",),
    "metrics": ("score",),
    "scoring": ("score_trajectory",),
    "voting": ("majority_vote",),
    "dryrun": ("dry_run",),
    "resume": ("ResumeIndex",),
}
_MODULE_OF = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    if (module := _MODULE_OF.get(name)) is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
