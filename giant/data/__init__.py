"""Benchmark data: MultiPathQA, your own task files, the synthetic demo set, and where each item's slide
lies.

The public names are exported lazily (PEP 562): loading MultiPathQA pulls pandas and the Hub client,
the demo set OpenSlide's writers, while `giant.data.defects` is a light record the job layer imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from giant.data.check import check_slides
    from giant.data.custom import load_task_file
    from giant.data.defects import Defect
    from giant.data.demo import build_demo
    from giant.data.digest import DatasetDigests
    from giant.data.multipathqa import load_multipathqa
    from giant.data.prompts import render_prompt
    from giant.data.slides import Located, SlideLocation, locate_all

__all__ = [
    "DatasetDigests",
    "Defect",
    "Located",
    "SlideLocation",
    "build_demo",
    "check_slides",
    "load_multipathqa",
    "load_task_file",
    "locate_all",
    "render_prompt",
]
_MODULES = {  # module (under giant.data) -> the names it exports
    "multipathqa": ("load_multipathqa",),
    "demo": ("build_demo",),
    "custom": ("load_task_file",),
    "digest": ("DatasetDigests",),
    "check": ("check_slides",),
    "slides": (
        "Located",
        "SlideLocation",
        "locate_all",
    ),
    "defects": ("Defect",),
    "prompts": ("render_prompt",),
}
_MODULE_OF = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    if (module := _MODULE_OF.get(name)) is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
