"""Rebuild the paper's Table 1 layout and figures from the runs logged in MLflow.

python scripts/make_tables.py                      # every job run of experiment "giant"
python scripts/make_tables.py --sweep-id SWEEP     # one sweep
python scripts/make_tables.py --filter "tags.model = 'gpt-5'" --published
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from giant.tracking.names import MODEL_TAG

REPO = Path(__file__).resolve().parents[1]
DEFAULT_URI = f"sqlite:///{REPO / 'mlruns' / 'mlflow.db'}"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--tracking-uri",
        default=os.environ.get("MLFLOW_TRACKING_URI", DEFAULT_URI),
        help="MLflow store (default: $MLFLOW_TRACKING_URI, else the project's mlruns/mlflow.db)",
    )
    parser.add_argument("--experiment", default="giant", help="experiment name (default: giant)")
    parser.add_argument("--sweep-id", default=None, help="only the job runs of this sweep (tag sweep_id)")
    parser.add_argument(
        "--filter", default=None, help=f"an MLflow filter string, e.g. \"tags.{MODEL_TAG} = 'gpt-5'\""
    )
    parser.add_argument("--out", type=Path, default=Path("outputs/tables"), help="output folder")
    parser.add_argument(
        "--published",
        action="store_true",
        help="also write the published numbers beside ours, with the difference",
    )
    parser.add_argument(
        "--no-log", action="store_true", help="do not log the files as an MLflow 'report' run"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from giant.config import absolute_sqlite_uri

    args.tracking_uri = absolute_sqlite_uri(args.tracking_uri)  # relative: from the project root, as run_eval
    if args.tracking_uri.startswith("sqlite:///"):
        db = Path(args.tracking_uri.removeprefix("sqlite:///"))
        if not db.is_file():  # opening it would create an empty store
            print(
                f"make_tables: no MLflow store at {db}: run `make demo` or scripts/run_eval.py first",
                file=sys.stderr,
            )
            return 1
    import mlflow

    logging.getLogger("mlflow").setLevel(logging.WARNING)  # its INFO lines would bury the table

    from giant.errors import ConfigError
    from giant.tracking.sweep_result import COST_HEADING, TABLE_HEADING
    from giant.tracking.tables.formats import cost_markdown, to_markdown
    from giant.tracking.tables.load import load_runs
    from giant.tracking.tables.report import log_report, write_report

    mlflow.set_tracking_uri(args.tracking_uri)
    try:
        records = load_runs(experiment=args.experiment, sweep_id=args.sweep_id, filter_string=args.filter)
    except ConfigError as err:
        print(f"make_tables: {err}", file=sys.stderr)
        return 1
    except mlflow.exceptions.MlflowException as err:
        print(f"make_tables: cannot search runs: {str(err).splitlines()[0]}", file=sys.stderr)
        return 1
    report = write_report(records, args.out, published=args.published)
    for line in [*report.table.version_warnings, *report.table.left_out]:
        print(f"make_tables: {line}", file=sys.stderr)
    print(TABLE_HEADING)
    print(to_markdown(report.table))
    print(COST_HEADING)
    print(cost_markdown(report.table))
    if report.table.superseded:
        print(f"({report.table.superseded} older run(s) of the same row and task replaced by the newest)")
    from giant.tracking.reviewed_table import reviewed_markdown

    reviewed = reviewed_markdown(mlflow.MlflowClient(args.tracking_uri), records)
    if reviewed is not None:  # only where a pathologist reviewed (scripts/review.py)
        print(reviewed)
    for name in report.skipped_figures:
        print(f"{name}: not drawn (no series with two or more x values)")
    if not args.no_log:
        run_id = log_report(report, experiment=args.experiment, sweep_id=args.sweep_id)
        print(f"logged as MLflow run {run_id} (giant.role=report)")
    print(f"wrote {', '.join(str(p) for p in report.files)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
