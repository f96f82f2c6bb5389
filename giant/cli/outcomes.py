"""How each job of a sweep ended, as one small file per job in the sweep folder.

A job of a sweep that stops on purpose (a config error, a run that could not be measured, an
interrupt) must not end the whole sweep, and Hydra's launchers carry no exit code back from a job
(joblib's workers and SLURM's nodes are other processes). So each job writes its outcome to
`<sweep dir>/outcomes/<job number>.json`, and the launching process reads them all when the sweep
ends (giant.cli.callbacks): one line per cause lists the jobs that did not complete, the script exits
with the highest code, and the sweep's MLflow parent run counts jobs that never opened a run.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from pydantic import BaseModel, ValidationError

from giant.errors import (
    EXIT_CONFIG,
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SETUP,
    EXIT_TERMINATED,
    EXIT_UNTRACKED,
)
from giant.secrets import redact, secret_values

OUTCOMES_DIR = "outcomes"  # under the sweep folder
# What a job's exit code makes of it in the sweep's status (any other code is a failure).
STATUS = {
    EXIT_OK: "complete",
    EXIT_UNTRACKED: "untracked",  # complete on disk; the tracking server did not take the job's end
    EXIT_INCOMPLETE: "incomplete",
    EXIT_INTERRUPTED: "interrupted",
    EXIT_TERMINATED: "interrupted",
    EXIT_CONFIG: "failed",
    EXIT_SETUP: "failed",
}


class JobOutcome(BaseModel):
    job: int  # hydra.job.num
    code: int  # the exit code the job would have as a single run (giant.errors)
    message: str  # the one line the job printed
    overrides: list[str]
    output_dir: str

    @property
    def status(self) -> str:
        return STATUS.get(self.code, "failed")

    def write(self, sweep_dir: Path) -> None:
        from giant.atomic import write_atomic

        text = redact(self.model_dump_json(indent=2), secret_values()) + "\n"
        write_atomic(sweep_dir / OUTCOMES_DIR / f"{self.job}.json", text.encode())


def record(code: int, message: str) -> bool:
    """Writes the outcome of the running job when it is a job of a sweep; False for a single run
    (whose exit code is the outcome)."""
    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode != RunMode.MULTIRUN:
        return False
    JobOutcome(
        job=hydra_cfg.job.num,
        code=code,
        message=message,
        overrides=list(hydra_cfg.overrides.task),
        output_dir=str(hydra_cfg.runtime.output_dir),
    ).write(Path(hydra_cfg.sweep.dir))
    return True


def read_outcomes(sweep_dir: Path) -> list[JobOutcome]:
    """The outcomes written so far, by job number (a file that cannot be read counts as absent)."""
    outcomes = []
    for path in (sweep_dir / OUTCOMES_DIR).glob("*.json"):
        with contextlib.suppress(OSError, ValidationError):
            outcomes.append(JobOutcome.model_validate_json(path.read_text(encoding="utf-8")))
    return sorted(outcomes, key=lambda outcome: outcome.job)


def clear_outcomes(sweep_dir: Path) -> None:
    """A sweep run again into the same folder must not count the earlier sweep's jobs."""
    for path in (sweep_dir / OUTCOMES_DIR).glob("*.json"):
        path.unlink(missing_ok=True)


def exit_code(outcomes: list[JobOutcome]) -> int:
    """The sweep's exit code: the highest of its jobs' codes."""
    return max((outcome.code for outcome in outcomes), default=EXIT_OK)


def failure_lines(outcomes: list[JobOutcome]) -> list[str]:
    """One line per distinct cause (exit code and message) of the jobs that did not complete, naming
    the jobs it stopped, except the interrupted ones (each printed how to resume when it stopped):
    six jobs failing on one missing file are one line, not six. A job is shown by the overrides that
    set it apart from the sweep's other jobs. An untracked job did complete: its line says that its
    records are on disk, not in MLflow (its message names the folder and the rerun that logs them)."""
    failed = [o for o in outcomes if o.code != EXIT_OK and o.status != "interrupted"]
    shared = set.intersection(*(set(o.overrides) for o in outcomes)) if len(outcomes) > 1 else set()
    causes: dict[tuple[int, str], list[JobOutcome]] = {}
    for outcome in failed:
        causes.setdefault((outcome.code, outcome.message), []).append(outcome)
    lines = []
    for (code, message), jobs in causes.items():
        named = ", ".join(
            f"#{o.job} {' '.join(x for x in o.overrides if x not in shared) or '(no overrides)'}"
            for o in jobs
        )
        count = f"{len(jobs)} of {len(outcomes)} sweep jobs"
        ended = "did not complete"
        if code == EXIT_UNTRACKED:
            ended = "completed with records on disk, not in MLflow"
        lines.append(f"{count} {ended}: {named} (exit {code}: {message})")
    return lines
