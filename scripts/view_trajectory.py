"""Write trajectory.html (one self-contained page) for a trajectory folder.

python scripts/view_trajectory.py outputs/2026-01-01/12-00-00/trajectories/demo__1/run0
python scripts/view_trajectory.py FOLDER --truth 2 --correct
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pydantic import ValidationError

from giant.record import (
    TRAJECTORY_FILE,
    JobLayout,
    has_trajectory,
    latest_by_slot,
    read_results,
    read_trajectory,
)
from giant.tracking.viewer import Scored, scored, write_html


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("path", type=Path, help="a trajectory folder (or its trajectory.json)")
    parser.add_argument(
        "--truth", default=None, help="the true answer to show (default: from its job's results)"
    )
    verdict = parser.add_mutually_exclusive_group()
    verdict.add_argument("--correct", dest="correct", action="store_true", default=None)
    verdict.add_argument("--incorrect", dest="correct", action="store_false")
    args = parser.parse_args(argv)
    folder = args.path.parent if args.path.name == TRAJECTORY_FILE else args.path
    if not has_trajectory(folder):
        print(f"view_trajectory: no {TRAJECTORY_FILE} in {folder}: pass a trajectory folder", file=sys.stderr)
        return 1
    try:
        traj = read_trajectory(folder)
    except ValidationError as exc:
        print(
            f"view_trajectory: {folder / TRAJECTORY_FILE} is not a trajectory "
            f"({exc.error_count()} validation errors, first: {exc.errors()[0]['msg']})",
            file=sys.stderr,
        )
        return 1
    if args.truth is None and args.correct is None:
        print(write_html(folder, traj, **_scored(folder)._asdict()))
    else:
        print(write_html(folder, traj, truth=args.truth, correct=args.correct))
    return 0


def _scored(folder: Path) -> Scored:
    """The folder's truth, verdict and label when it sits in a job folder (trajectories/<key>/run<k>)."""
    job = JobLayout.of_trajectory(folder)
    if job is None:
        return Scored()
    for record in latest_by_slot(read_results(job.results)).values():
        if record.trajectory and (job.out_dir / record.trajectory).resolve() == folder.resolve():
            return scored(record)
    return Scored()


if __name__ == "__main__":
    sys.exit(main())
