"""One comparison end to end: sources -> pairs -> flipped trajectories -> files -> MLflow run.
scripts/compare.py parses the command line and calls `compare`."""

from __future__ import annotations

import shutil
from pathlib import Path

from pydantic import BaseModel

from giant.compare.links import attach_trajectories
from giant.compare.pairs import Comparison, compare_runs
from giant.compare.render import flips_csv, to_csv, to_html, to_latex, to_markdown
from giant.compare.sources import RunData, load_run, sweep_run_ids
from giant.config import TrackingSettings
from giant.errors import ConfigError
from giant.record import TRAJECTORIES_DIR

FILES = {
    "comparison.md": to_markdown,
    "comparison.tex": to_latex,
    "comparison.csv": to_csv,
    "flips.csv": flips_csv,
    "comparison.html": to_html,
}


class Outcome(BaseModel):
    comparison: Comparison
    files: list[Path]
    trajectories: int  # trajectory folders copied for the flipped items
    run_id: str | None = None


def compare(
    sources: list[str],
    out_dir: Path,
    tracking: TrackingSettings,
    *,
    sweep_id: str | None = None,
    filter_string: str | None = None,
    replicates: int = 1000,
    seed: int = 0,
    log: bool = True,
) -> Outcome:
    """Compare job folders / run ids, then the runs of `sweep_id` (narrowed by `filter_string`)."""
    if filter_string and not sweep_id:
        raise ConfigError("--filter narrows the runs of a sweep: pass --sweep-id with it")
    wanted = list(sources)
    if sweep_id:
        wanted += [
            run_id for run_id in sweep_run_ids(sweep_id, tracking, filter_string) if run_id not in wanted
        ]
    if len(wanted) < 2:
        raise ConfigError(f"a comparison needs at least two runs, got {len(wanted)}; pass two or more")
    runs: list[RunData] = [load_run(where, tracking) for where in wanted]
    comparison = compare_runs(runs, replicates=replicates, seed=seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    # A comparison written here before is replaced whole: its flipped items' trajectories would
    # otherwise sit beside this one's (the other files are overwritten by name).
    shutil.rmtree(out_dir / TRAJECTORIES_DIR, ignore_errors=True)
    copied = attach_trajectories(comparison, runs, out_dir)
    files = []
    for name, render in FILES.items():
        path = out_dir / name
        path.write_text(render(comparison), encoding="utf-8")
        files.append(path)
    outcome = Outcome(comparison=comparison, files=files, trajectories=copied)
    if log:
        from giant.compare.track import log_comparison

        outcome.run_id = log_comparison(comparison, runs, files, out_dir, tracking)
    return outcome
