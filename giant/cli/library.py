"""`giant.evaluate`: one job of scripts/run_eval.py as a function call, in the calling process.

The shipped configuration (conf/config.yaml) is composed with the overrides the command line would
take (giant.confdir.compose), checked by the same checks the command line runs before Hydra (an
unknown option or key is a ConfigError naming the fix), validated and run by giant.job.run_job with the
job's context passed as plain values. The job folder gets what Hydra writes for a single run (.hydra/
with config.yaml, hydra.yaml and overrides.yaml), so a job run either way reads and resumes the same.
Errors are the exceptions the command line maps to its exit codes (giant.errors): ConfigError (2),
RunStopped (its code), giant.interrupt.Interrupted (143), KeyboardInterrupt (130).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from giant.context import JobContext
from giant.errors import ConfigError
from giant.record.summary import Summary

CONFIG_NAME = "config"  # scripts/run_eval.py's entry config


def evaluate(overrides: Sequence[str] = (), *, output_dir: str | Path | None = None) -> Summary | None:
    """Run the job `python scripts/run_eval.py <overrides>` runs, here; its Summary (None for a dry
    run). `output_dir`: the job's folder; None: the folder the command line would pick
    (hydra.run.dir, under paths.output_dir). Sweeps (`a,b` values, `-m`) are the command line's."""
    from giant.cli.checks import (
        check_group_choices,
        check_key_overrides,
        check_override_keys,
        parse_overrides,
    )
    from giant.confdir import compose
    from giant.config import PathSettings
    from giant.job import run_job

    given = [str(override) for override in overrides]
    swept = [text for text in given if text.startswith("-")]
    swept += [str(o.input_line) for o in parse_overrides(given) if o.is_sweep_override()]
    if swept:
        raise ConfigError(f"{swept[0]}: giant.evaluate runs one job; run a sweep from the command line (-m)")
    check_key_overrides(given)
    check_group_choices(given)
    check_override_keys(given, CONFIG_NAME)
    cfg = compose(CONFIG_NAME, given)
    folder = Path(output_dir) if output_dir is not None else _run_dir(cfg)
    PathSettings.from_config(cfg).check_writable(folder, sweep=False)
    context = JobContext(output_dir=folder.absolute(), overrides=tuple(given))
    _save_hydra_files(cfg, context)
    if not _loop_running():
        return run_job(_job_config(cfg), context)
    # A notebook (Jupyter runs its own event loop on this thread) or an async harness: the job's
    # asyncio.run() cannot start here, so the job runs on a thread of its own and this call waits.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="giant-evaluate") as pool:
        return pool.submit(run_job, _job_config(cfg), context).result()


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _run_dir(cfg: DictConfig) -> Path:
    """hydra.run.dir as Hydra resolves it for a single run (its `${now:...}` resolver registered)."""
    from hydra.core.utils import setup_globals

    setup_globals()
    return Path(str(OmegaConf.select(cfg, "hydra.run.dir")))


def _job_config(cfg: DictConfig) -> DictConfig:
    """The config without its `hydra` section, as a Hydra app hands it to the job."""
    job = OmegaConf.masked_copy(cfg, [str(key) for key in cfg if key != "hydra"])
    OmegaConf.set_struct(job, True)
    return job


def _save_hydra_files(cfg: DictConfig, context: JobContext) -> None:
    """.hydra/config.yaml, hydra.yaml and overrides.yaml, as Hydra writes them into a job's folder
    (they go to MLflow with the job's artifacts), with URL credentials and secret values redacted."""
    from giant.record.layout import HYDRA_DIR
    from giant.secrets import redact, secret_values

    folder = context.output_dir / HYDRA_DIR
    folder.mkdir(parents=True, exist_ok=True)
    hydra_section = OmegaConf.masked_copy(cfg, ["hydra"])
    hydra_section.hydra.runtime.output_dir = str(context.output_dir)
    hydra_section.hydra.overrides.task = list(context.overrides)
    for name, node in (
        ("config.yaml", _job_config(cfg)),
        ("hydra.yaml", hydra_section),
        ("overrides.yaml", OmegaConf.create(list(context.overrides))),
    ):
        # without credentials, as the command line rewrites them (giant.cli.joblog.redact_hydra_files)
        (folder / name).write_text(redact(OmegaConf.to_yaml(node), secret_values()), encoding="utf-8")
