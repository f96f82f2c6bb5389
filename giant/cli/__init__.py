"""The command line: what runs around a job of scripts/run_eval.py, and nowhere else.

`run` turns a job into one line and its exit code and guards a sweep against signals; `sweep` reads
which jobs a sweep launches and which Hydra plugins run it; the sweep's lifecycle is the Hydra
callbacks conf/config.yaml names: `sweep_check` (every job's settings and data, before the sweep
starts) and `callbacks` (the sweep's MLflow parent run, its result and its exit code), which reads
the jobs' `outcomes`. The modules below (giant.job, giant.config, giant.tracking) know nothing of
Hydra's launchers; the root stays light, as Hydra imports it for each callback.
"""

from __future__ import annotations

from giant.cli.sweep import expand, plugin_name, sweep_jobs

__all__ = ["expand", "plugin_name", "sweep_jobs"]
