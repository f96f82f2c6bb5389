"""scripts/run_eval.py's process and job: the checks and signal guard before Hydra starts, and a job's
ending as one line and the exit code the script's docstring lists (giant/errors.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NoReturn

from omegaconf import DictConfig

from giant.cli.checks import check_command_line  # also registers ${giant_root:} and `tools: all`
from giant.errors import (
    EXIT_CONFIG,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    ConfigError,
    RunStopped,
    exit_with,
)

PROG = "run_eval"
RESUME = "rerun the same command to resume (finished items are kept)"


def start(main: Callable[[], object]) -> None:
    """The process: the SIGTERM guard (a sweep's, or a single run's), the command line checked before
    Hydra runs, then the Hydra app `main`; Ctrl-C outside a job is one line and exit 130."""
    from giant.interrupt import guard_run, guard_sweep

    if {"-m", "--multirun"} & set(sys.argv[1:]):
        guard_sweep()  # SIGTERM reaches the sweep's job processes, which stop cleanly
    else:
        guard_run()  # SIGTERM while Hydra composes or the job sets up: one line, exit 143
    check_command_line(PROG, "config", sys.argv[1:])
    try:
        main()
    except KeyboardInterrupt:  # Ctrl-C outside a job: between two jobs of a sweep, or while one starts
        _interrupted()


def evaluate(cfg: DictConfig) -> float | None:
    """One job (giant.job.run_job) with its ending: its metric, or one line and its exit code."""
    from giant.cli.context import hydra_context
    from giant.cli.outcomes import record
    from giant.confdir import prepare
    from giant.interrupt import Interrupted, job_in_progress, stopped_by
    from giant.job import run_job

    prepare()  # a launcher's job process (joblib, submitit) resolves `${giant_root:}` too
    if reason := stopped_by():  # a stop of the sweep reached this process while an earlier job ran
        record(EXIT_TERMINATED, f"not started: the sweep was stopped by {reason}")
        _end_sweep_here(reason)
        return None
    try:
        with job_in_progress():  # a SIGTERM to a basic-launcher sweep waits for the job's next check
            summary = run_job(cfg, hydra_context())
    except ConfigError as err:
        _ended(EXIT_CONFIG, str(err))
        return None
    except RunStopped as err:
        _ended(err.code, str(err))
        return None
    except Interrupted as stop:  # SIGTERM or a SLURM time limit: stopped cleanly, MLflow run KILLED
        record(EXIT_TERMINATED, stop.hint)
        print(f"{PROG}: {stop.hint}", file=sys.stderr)
        stop.hand_over()  # under submitit: checkpoint and requeue (exits the process)
        if _launcher() == "JoblibLauncher":  # an exit would make joblib kill the other jobs before
            return None  # they stop cleanly
        sys.exit(EXIT_TERMINATED)
    except KeyboardInterrupt:  # the MLflow run is already closed as KILLED, results.jsonl kept
        record(EXIT_INTERRUPTED, f"interrupted; {RESUME}")
        _interrupted()
    if record(EXIT_OK, "complete") and (reason := stopped_by()):
        _end_sweep_here(reason)  # the sweep was signalled while this job finished
    return summary.metric.point if summary is not None else None


def _ended(code: int, message: str) -> None:
    """A job that could not complete: one line, then its exit code. A job of a sweep records its
    outcome and returns instead, so that the other jobs still run; the sweep exits with the highest
    code of its jobs when it ends (giant.cli.callbacks)."""
    from giant.cli.outcomes import record

    if not record(code, message):
        exit_with(PROG, message, code)
    print(f"{PROG}: {message}", file=sys.stderr)


def _interrupted() -> NoReturn:
    """Ctrl-C, in a job or between two jobs of a sweep: one line, no traceback, exit 130. The stop is
    noted so that a sweep's parent run is closed as interrupted, not failed."""
    from giant.interrupt import note_stop

    note_stop("Ctrl-C")
    print(f"{PROG}: interrupted; {RESUME}", file=sys.stderr)
    sys.exit(EXIT_INTERRUPTED)


def _end_sweep_here(reason: str) -> None:
    """Under Hydra's basic launcher the jobs run in the sweep's own process, and Hydra would start the
    next one: a stopped sweep ends here instead (exit 143). Other launchers' jobs just return, and the
    sweep's process ends the sweep."""
    if _launcher() == "BasicLauncher":
        print(f"{PROG}: stopped by {reason}; {RESUME}", file=sys.stderr)
        sys.exit(EXIT_TERMINATED)


def _launcher() -> str:
    """The running job's Hydra launcher: BasicLauncher, JoblibLauncher, ..."""
    from hydra.core.hydra_config import HydraConfig

    from giant.cli.sweep import plugin_name

    return plugin_name(HydraConfig.get().launcher)
