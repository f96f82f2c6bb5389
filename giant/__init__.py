"""giant: large multimodal models navigating gigapixel pathology slides (GIANT, arXiv 2511.19652).

`giant.evaluate(overrides, output_dir=...)` runs one job of scripts/run_eval.py in the calling process
and returns its summary (docs/running.md, "From Python"); the layers are subpackages and modules
(docs/ARCHITECTURE.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the root stays light: Hydra imports it for each callback
    from collections.abc import Sequence
    from pathlib import Path

    from giant.record.summary import Summary

__version__ = "0.1.0"


def evaluate(overrides: Sequence[str] = (), *, output_dir: str | Path | None = None) -> Summary | None:
    """`python scripts/run_eval.py <overrides>` as a function: conf/ composed with `overrides`, checked
    and validated as the command line does, the job run here; returns its Summary (None for a dry run).
    Raises what the command line maps to exit codes: giant.errors.ConfigError (2), RunStopped (its
    code). `output_dir`: the job's folder (None: hydra.run.dir, under paths.output_dir)."""
    from giant.cli.library import evaluate as run

    return run(overrides, output_dir=output_dir)


__all__ = ["__version__", "evaluate"]
