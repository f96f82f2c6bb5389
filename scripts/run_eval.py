"""The one entrypoint: compose the config, run the evaluation, log it to MLflow.

python scripts/run_eval.py                                   # random provider on the demo set
python scripts/run_eval.py provider=openai dataset=tcga limit=20
python scripts/run_eval.py -m dataset=tcga,panda agent.max_steps=5,10,20
python scripts/run_eval.py --cfg job                         # print the composed config
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from giant.config import check_command_line
from giant.errors import ConfigError, exit_with

EXIT_INTERRUPTED = 130  # the shell's code for Ctrl-C


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> float | None:
    from giant.interrupt import EXIT_TERMINATED, Interrupted, note_stop, stopped_by
    from giant.job import run_job

    if stopped_by():  # a joblib worker whose earlier job was stopped: the sweep is ending
        return None
    try:
        return run_job(cfg)
    except ConfigError as err:
        exit_with("run_eval", str(err))
    except Interrupted as stop:  # SIGTERM or a SLURM time limit: stopped cleanly, MLflow run KILLED
        print(f"run_eval: {stop.hint}", file=sys.stderr)
        stop.hand_over()  # under submitit: checkpoint and requeue (exits the process)
        if _in_worker_pool():  # an exit would make joblib kill the other jobs before they stop cleanly
            return None
        sys.exit(EXIT_TERMINATED)
    except KeyboardInterrupt:  # the MLflow run is already closed as KILLED, results.jsonl kept
        note_stop("Ctrl-C")  # a sweep's parent run is then closed as interrupted, not failed
        print(
            "run_eval: interrupted; rerun the same command to resume (finished items are kept)",
            file=sys.stderr,
        )
        sys.exit(EXIT_INTERRUPTED)


def _in_worker_pool() -> bool:
    """True in a joblib worker: the sweep process, not the job, ends the sweep (exit code 143)."""
    from hydra.core.hydra_config import HydraConfig

    return "joblib" in str(HydraConfig.get().launcher.get("_target_", ""))


if __name__ == "__main__":
    check_command_line("run_eval", "config", sys.argv[1:])
    if {"-m", "--multirun"} & set(sys.argv[1:]):
        from giant.interrupt import guard_sweep

        guard_sweep()  # SIGTERM reaches the sweep's job processes, which stop cleanly
    main()
    from giant.interrupt import EXIT_TERMINATED, stopped_by

    if stopped_by():  # a sweep whose jobs stopped on SIGTERM (joblib workers return; see main)
        sys.exit(EXIT_TERMINATED)
