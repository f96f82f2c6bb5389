"""A pathologist's review of a run in MLflow's review UI: label schemas and a review queue of its traces.

python scripts/review.py RUN_ID                      # a job's MLflow run, or a sweep's parent run
python scripts/review.py RUN_ID --per-task 10        # 10 item-runs per task, half correct, half not
python scripts/review.py RUN_ID --reviewer ana@lab --reviewer ben@lab --ui http://127.0.0.1:5000

The reviewer opens the printed address (`make ui` serves it), picks the queue, and answers the
questions on each trace; the verdicts are HUMAN assessments that `make tables`, `compare` and the
report read as the reviewed evidence hit rate.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_URI = f"sqlite:///{REPO / 'mlruns' / 'mlflow.db'}"
DEFAULT_UI = "http://127.0.0.1:5000"  # where `make ui` serves
PROG = "review"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run_id", help="a job's MLflow run id, or a sweep's parent run id")
    parser.add_argument("--per-task", type=int, default=None, help="item-runs per task (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed")
    parser.add_argument("--name", default=None, help="the queue's name (default: giant-<run id's first 8>)")
    parser.add_argument("--reviewer", action="append", default=[], help="a reviewer's user name (repeat)")
    parser.add_argument("--ui", default=DEFAULT_UI, help=f"the MLflow UI's address (default: {DEFAULT_UI})")
    parser.add_argument(
        "--tracking-uri",
        default=os.environ.get("MLFLOW_TRACKING_URI", DEFAULT_URI),
        help="MLflow store (default: $MLFLOW_TRACKING_URI, else the project's mlruns/mlflow.db)",
    )
    args = parser.parse_args(argv)
    if args.per_task is not None and args.per_task < 1:
        parser.error("--per-task must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from mlflow import MlflowClient

    from giant.config import absolute_sqlite_uri
    from giant.errors import ConfigError, exit_with
    from giant.tracking.review import open_review, review_address

    client = MlflowClient(absolute_sqlite_uri(args.tracking_uri))
    try:
        review = open_review(
            client,
            args.run_id,
            per_task=args.per_task,
            seed=args.seed,
            name=args.name,
            reviewers=args.reviewer,
        )
    except ConfigError as err:
        exit_with(PROG, str(err))
    print(f"review queue '{review.queue_name}': {len(review.trace_ids)} trace(s) of {review.jobs} job(s)")
    print(f"review at {review_address(args.ui, review.experiment_id)} (queue '{review.queue_name}')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
