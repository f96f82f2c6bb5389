"""A sweep's data checked as a whole before it starts: every job's CSV, slide folder and slides, with
the check a single run makes (giant.job.check_data), before the sweep's MLflow parent run exists and
before a launcher queues anything (SLURM included).

A Hydra callback listed before the MLflow one (conf/config.yaml): its `on_multirun_start` runs first.
Jobs that share their data settings are checked once; each distinct problem (a setting that does not
validate, such as a CSV or slide folder that does not exist, or the data check's) is one line naming
the jobs it affects, and the sweep exits 2 (the config code) with no run opened. A check that fails
in a way it does not foresee stops the sweep too: Hydra turns an exception in a callback into a
warning, and the jobs would then each crash mid-sweep.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

from hydra import compose
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from giant.cli.sweep import sweep_jobs
from giant.config import PathSettings, RunSettings
from giant.errors import EXIT_CONFIG, ConfigError, exit_with
from giant.job import check_data

PROG = "run_eval"
log = logging.getLogger(__name__)


def data_key(settings: RunSettings) -> str:
    """What decides a job's data: jobs that agree on it need one check."""
    parts = [
        settings.dataset.model_dump(mode="json"),
        str(settings.paths.wsi_root),
        str(settings.paths.cache_dir),
        settings.run.limit,
        settings.run.item_ids,
    ]
    return json.dumps(parts, sort_keys=True, default=str)


def sweep_problems(
    jobs: list[tuple[list[str], RunSettings | ConfigError]], *, data: bool = True
) -> list[str]:
    """One line per distinct problem among the jobs (overrides and settings, in launch order, or the
    error their settings raised), naming the jobs it affects by the overrides that set them apart;
    [] when every job's settings (and with `data`, its data) are usable. Dry runs' data is not
    checked: they report missing slides themselves."""
    checked: dict[str, str | None] = {}
    problems: dict[str, list[int]] = {}
    for number, (_, settings) in enumerate(jobs):
        if isinstance(settings, ConfigError):
            problems.setdefault(str(settings), []).append(number)
            continue
        if not data or settings.run.dry_run:
            continue
        key = data_key(settings)
        if key not in checked:
            checked[key] = _problem(settings)
        if (problem := checked[key]) is not None:
            problems.setdefault(problem, []).append(number)
    shared = set.intersection(*(set(overrides) for overrides, _ in jobs)) if len(jobs) > 1 else set()

    def named(number: int) -> str:
        apart = [x for x in jobs[number][0] if x not in shared]
        return f"#{number} {' '.join(apart)}" if apart else f"#{number}"

    lines = []
    for problem, numbers in problems.items():
        if len(numbers) == 1:  # as the settings check has always named one job
            lines.append(f"{problem} (sweep job: {' '.join(jobs[numbers[0]][0])})")
        elif len(numbers) == len(jobs):
            lines.append(f"{problem} (every one of the {len(jobs)} sweep jobs)")
        else:
            which = ", ".join(named(n) for n in numbers)
            lines.append(f"{problem} ({len(numbers)} of {len(jobs)} sweep jobs: {which})")
    return lines


def _problem(settings: RunSettings) -> str | None:
    quiet = logging.getLogger("giant.job")  # a job's own warnings (some slides missing) come when it runs
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        check_data(settings)
    except ConfigError as err:
        return str(err)
    except OSError as exc:  # a folder the check reads or writes (the demo's cache) is not usable
        return f"{exc.filename or 'the data'}: {exc.strerror or exc}"
    except Exception as exc:  # a bug in a check: stop the sweep here, not in every job after it started
        log.exception("the data check of a sweep job failed")
        return (
            f"the data check failed ({type(exc).__name__}: {exc}); this is a bug: run one job alone "
            "(without -m) for its traceback and report it"
        )
    finally:
        quiet.setLevel(level)
    return None


class SweepDataCheck(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        jobs: list[tuple[list[str], RunSettings | ConfigError]] = []
        name = config.hydra.job.config_name
        for overrides in sweep_jobs(config):
            try:
                jobs.append((overrides, RunSettings.from_config(compose(name, overrides))))
            except ConfigError as err:
                jobs.append((overrides, err))
        # Bad settings first: nothing, not even the sweep's folder, is made for a command that is wrong
        _stop_on(sweep_problems(jobs, data=False))
        try:  # the folder the data check writes in (the demo's slides); the sweep's own is made later
            PathSettings.from_config(config).check_cache()
        except ConfigError as err:
            exit_with(PROG, str(err))
        _stop_on(sweep_problems(jobs))


def _stop_on(lines: list[str]) -> None:
    if lines:
        for line in lines:
            print(f"{PROG}: {line}", file=sys.stderr)
        sys.exit(EXIT_CONFIG)
