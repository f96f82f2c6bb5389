"""The one entrypoint: compose the config, run the evaluation, log it to MLflow.

python scripts/run_eval.py                                   # random provider on the demo set
python scripts/run_eval.py provider=openai dataset=tcga limit=20
python scripts/run_eval.py -m dataset=tcga,panda agent.max_steps=5,10,20
python scripts/run_eval.py --cfg job                         # print the composed config

Exit codes (giant/errors.py): 0 complete, 2 bad config, 3 stopped mid-run, 4 item-runs left
unmeasured, 130 Ctrl-C, 143 SIGTERM. A sweep's job that ends with 2, 3 or 4 records its outcome and
the sweep goes on; the sweep then exits with the highest code of its jobs (giant/outcomes.py).
"""

from __future__ import annotations

import sys
from typing import NoReturn

import hydra
from omegaconf import DictConfig

from giant.config import check_command_line
from giant.errors import (
    EXIT_CONFIG,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    ConfigError,
    RunStopped,
    exit_with,
)

RESUME = "rerun the same command to resume (finished items are kept)"


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> float | None:
    from giant.interrupt import Interrupted, job_in_progress, stopped_by
    from giant.job import run_job
    from giant.outcomes import record

    if reason := stopped_by():  # a stop of the sweep reached this process while an earlier job ran
        record(EXIT_TERMINATED, f"not started: the sweep was stopped by {reason}")
        _end_sweep_here(reason)
        return None
    try:
        with job_in_progress():  # a SIGTERM to a basic-launcher sweep waits for the job's next check
            metric = run_job(cfg)
    except ConfigError as err:
        _ended(EXIT_CONFIG, str(err))
        return None
    except RunStopped as err:
        _ended(err.code, str(err))
        return None
    except Interrupted as stop:  # SIGTERM or a SLURM time limit: stopped cleanly, MLflow run KILLED
        record(EXIT_TERMINATED, stop.hint)
        print(f"run_eval: {stop.hint}", file=sys.stderr)
        stop.hand_over()  # under submitit: checkpoint and requeue (exits the process)
        if _in_worker_pool():  # an exit would make joblib kill the other jobs before they stop cleanly
            return None
        sys.exit(EXIT_TERMINATED)
    except KeyboardInterrupt:  # the MLflow run is already closed as KILLED, results.jsonl kept
        record(EXIT_INTERRUPTED, f"interrupted; {RESUME}")
        _interrupted()
    if record(EXIT_OK, "complete") and (reason := stopped_by()):
        _end_sweep_here(reason)  # the sweep was signalled while this job finished
    return metric


def _ended(code: int, message: str) -> None:
    """A job that could not complete: one line, then its exit code. A job of a sweep records its
    outcome and returns instead, so that the other jobs still run; the sweep exits with the highest
    code of its jobs when it ends (giant.tracking.callbacks)."""
    from giant.outcomes import record

    if not record(code, message):
        exit_with("run_eval", message, code)
    print(f"run_eval: {message}", file=sys.stderr)


def _interrupted() -> NoReturn:
    """Ctrl-C, in a job or between two jobs of a sweep: one line, no traceback, exit 130. The stop is
    noted so that a sweep's parent run is closed as interrupted, not failed."""
    from giant.interrupt import note_stop

    note_stop("Ctrl-C")
    print(f"run_eval: interrupted; {RESUME}", file=sys.stderr)
    sys.exit(EXIT_INTERRUPTED)


def _end_sweep_here(reason: str) -> None:
    """Under Hydra's basic launcher the jobs run in the sweep's own process, and Hydra would start the
    next one: a stopped sweep ends here instead (exit 143). Other launchers' jobs just return, and the
    sweep's process ends the sweep."""
    from hydra.core.hydra_config import HydraConfig

    if str(HydraConfig.get().launcher.get("_target_", "")).endswith("BasicLauncher"):
        print(f"run_eval: stopped by {reason}; {RESUME}", file=sys.stderr)
        sys.exit(EXIT_TERMINATED)


def _in_worker_pool() -> bool:
    """True in a joblib worker: the sweep process, not the job, ends the sweep (exit code 143)."""
    from hydra.core.hydra_config import HydraConfig

    return "joblib" in str(HydraConfig.get().launcher.get("_target_", ""))


if __name__ == "__main__":
    check_command_line("run_eval", "config", sys.argv[1:])
    if {"-m", "--multirun"} & set(sys.argv[1:]):
        from giant.interrupt import guard_sweep

        guard_sweep()  # SIGTERM reaches the sweep's job processes, which stop cleanly
    try:
        main()
    except KeyboardInterrupt:  # Ctrl-C outside a job: between two jobs of a sweep, or while one starts
        _interrupted()
