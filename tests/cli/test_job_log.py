"""A job's folder records the job (giant.cli.joblog): every line it prints, the summary line, the resume
line and a one-line error included, is also in its `run_eval.log`; a line redrawn in place (the
progress bar) is kept in its last state only."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from giant.cli.joblog import Tee
from giant.data.demo import build_demo
from tests.helpers.cli import SECRET, Env


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Env:
    return Env.make(tmp_path_factory.mktemp("job_log"))


def _log(folder: Path) -> str:
    return (folder / "run_eval.log").read_text(encoding="utf-8")


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_the_job_folder_holds_what_the_job_printed(cli: Env) -> None:
    folder = cli.tmp / "job"
    args = ("provider=random", "dataset=demo", "dataset.benchmark=demo_shapes", "limit=2")
    first = cli.run(*args, "tracking.enabled=false", f"hydra.run.dir={folder}")
    summary = next(line for line in first.stdout.splitlines() if line.startswith("demo_shapes giant"))
    assert summary in _log(folder).splitlines()
    # a rerun into a new folder resumes: its resume line is in that folder's log
    again = cli.tmp / "again"
    second = cli.run(*args, "tracking.enabled=false", f"hydra.run.dir={again}")
    resume = next(line for line in second.stdout.splitlines() if line.startswith("resuming run key"))
    assert resume in _log(again).splitlines()
    assert "\r" not in _log(again)  # the progress bar's redraws are not kept


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_a_one_line_error_is_in_the_log(cli: Env) -> None:
    folder = cli.tmp / "stopped"
    empty = cli.tmp / "no_slides"
    empty.mkdir()
    demo = build_demo(cli.tmp / "cache" / "demo")
    proc = cli.run(
        "provider=random", "dataset=demo", f"dataset.csv_path={demo.csv_path}", f"dataset.wsi_root={empty}",
        "tracking.enabled=false", f"hydra.run.dir={folder}", check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line in _log(folder).splitlines()


def test_tee_keeps_whole_lines_and_the_last_state_of_a_redrawn_line() -> None:
    screen, log = io.StringIO(), io.StringIO()
    tee = Tee(screen, log)
    tee.write("\r 10%|#   |")
    tee.write("\r100%|####|\n")
    tee.write("done: accuracy 0.5")
    assert log.getvalue() == "100%|####|\n"  # the unfinished line waits for its newline
    tee.write("\n")
    assert log.getvalue() == "100%|####|\ndone: accuracy 0.5\n"
    assert screen.getvalue() == "\r 10%|#   |\r100%|####|\ndone: accuracy 0.5\n"  # the terminal sees all


def test_tee_and_the_log_handlers_redact_url_credentials_and_secret_values() -> None:
    """A line that names a URL setting (`cannot reach provider.base_url=...`) or holds an environment
    secret reaches neither the terminal nor run_eval.log whole (giant.secrets.redact)."""
    import logging

    from giant.cli.joblog import Redacting

    screen, log = io.StringIO(), io.StringIO()
    tee = Tee(screen, log, secrets=[SECRET])
    tee.write(f"cannot reach provider.base_url=http://bob:pw-123456@10.0.0.1/v1 with {SECRET}\n")
    expected = "cannot reach provider.base_url=http://***@10.0.0.1/v1 with ***\n"
    assert screen.getvalue() == expected and log.getvalue() == expected

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(Redacting([SECRET]))
    logger = logging.getLogger("giant.test_redacting")
    logger.addHandler(handler)
    try:
        logger.warning("preflight: %s refused (%s)", "https://h/v1?api-key=k-987654", SECRET)
    finally:
        logger.removeHandler(handler)
    assert stream.getvalue() == "preflight: https://h/v1?api-key=*** refused (***)\n"
