"""python -m giant.report <job folder>: (re)write the job's report.html from its files."""

from __future__ import annotations

import argparse
from pathlib import Path

from giant.errors import ConfigError, exit_with
from giant.report.render import write_report

PROG = "python -m giant.report"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__)
    parser.add_argument("job", type=Path, help="a job folder (holding results.jsonl)")
    args = parser.parse_args(argv)
    try:
        path = write_report(args.job)
    except ConfigError as exc:
        exit_with(PROG, str(exc))
    print(path)


if __name__ == "__main__":
    main()
