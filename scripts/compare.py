"""Paired comparison of finished runs: are their differences real?

python scripts/compare.py A B [C ...]            # job folders or MLflow run ids
python scripts/compare.py --sweep-id SWEEP --filter "tags.dataset = 'demo_count'"
python scripts/compare.py A B --out outputs/compare/t10_vs_t20 --no-log
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_URI = f"sqlite:///{REPO / 'mlruns' / 'mlflow.db'}"
PROG = "compare"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="*", help="job folders or MLflow run ids (the first is A)")
    parser.add_argument("--sweep-id", default=None, help="also compare the job runs of this sweep")
    parser.add_argument("--filter", default=None, help="an MLflow filter narrowing the sweep's runs")
    parser.add_argument("--out", type=Path, default=Path("outputs/compare"), help="output folder")
    parser.add_argument(
        "--tracking-uri",
        default=os.environ.get("MLFLOW_TRACKING_URI", DEFAULT_URI),
        help="MLflow store (default: $MLFLOW_TRACKING_URI, else the project's mlruns/mlflow.db)",
    )
    parser.add_argument("--experiment", default="giant", help="experiment name (default: giant)")
    parser.add_argument("--replicates", type=int, default=1000, help="paired bootstrap replicates")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    parser.add_argument("--no-log", action="store_true", help="do not log an MLflow 'comparison' run")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # stderr stays one line
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    from giant.compare.run import compare
    from giant.compare.sources import RUN_ID
    from giant.config import TrackingSettings, shipped
    from giant.errors import ConfigError, exit_with

    if args.replicates < 1:
        exit_with(PROG, f"--replicates={args.replicates}: must be at least 1")
    needs_store = not args.no_log or args.sweep_id or any(RUN_ID.fullmatch(r) for r in args.runs)
    replaced = (args.out / "comparison.md").is_file()
    try:
        tracking = shipped(
            TrackingSettings, enabled=bool(needs_store), uri=args.tracking_uri, experiment=args.experiment
        )
        outcome = compare(
            args.runs,
            args.out,
            tracking,
            sweep_id=args.sweep_id,
            filter_string=args.filter,
            replicates=args.replicates,
            seed=args.seed,
            log=not args.no_log,
        )
    except ConfigError as err:
        exit_with(PROG, str(err))
    for line in outcome.comparison.warnings:
        print(f"{PROG}: {line}", file=sys.stderr)
    print((args.out / "comparison.md").read_text(encoding="utf-8"))
    if replaced:
        print(f"(replaced the comparison that was in {args.out}; --out DIR keeps each in its own folder)")
    print(f"copied {outcome.trajectories} trajectory folder(s) of flipped items")
    if needs_store:  # a pathologist's verdicts on the runs' traces (scripts/review.py), where given
        from mlflow import MlflowClient

        from giant.tracking.reviewed_table import reviewed_compare_lines

        logged = [(run.letter, run.task, run.run_id) for run in outcome.comparison.runs if run.run_id]
        for line in reviewed_compare_lines(MlflowClient(tracking.uri), logged):
            print(line)
    if outcome.run_id:
        print(f"logged as MLflow run {outcome.run_id} (giant.role=comparison)")
    print(f"wrote {', '.join(str(p) for p in outcome.files)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
