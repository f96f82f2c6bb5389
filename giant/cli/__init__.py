"""The command line: what runs around a job of scripts/run_eval.py, and the only package that imports
Hydra (beside giant.confdir's composition of conf/).

`checks` are the checks every script runs before Hydra; `run` turns a job into one line and its exit
code and guards a sweep against signals; `context` hands the job Hydra's folder, sweep and overrides as
plain values; `library` is `giant.evaluate`, the same job in the caller's process; `sweep` reads
which jobs a sweep launches and which Hydra plugins run it; the Hydra callbacks conf/config.yaml names
are `console` and `joblog` (the console and the job's log file), `sweep_check` (every job's settings
and data, before the sweep starts) and `callbacks` (the sweep's MLflow parent run, its result and its
exit code), which reads the jobs' `outcomes`. The modules below (giant.job, giant.config,
giant.tracking) know nothing of Hydra; the root stays light, as Hydra imports it for each callback.
"""

from __future__ import annotations

from giant.cli.sweep import expand, plugin_name, sweep_jobs

__all__ = ["expand", "plugin_name", "sweep_jobs"]
