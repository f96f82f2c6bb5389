"""A sweep is checked as a whole before it starts (giant.cli.sweep_check): the data of every job, with the
check a single run makes, one line per distinct problem naming the jobs it affects, exit 2, and no
MLflow store, parent run or job folder made. A job that fails anyway ends the sweep with one line per
distinct cause (giant.cli.outcomes.failure_lines)."""

from __future__ import annotations

from pathlib import Path

import pytest

from giant.cli.outcomes import JobOutcome, failure_lines
from giant.data.demo import build_demo
from tests.helpers.cli import Env

BRIEF = ("-m", "dataset=tcga,panda", "agent.max_steps=5,10,20")  # the sweep: 6 jobs


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Env:
    # no CSV in the cache and none to download: the data check must say so
    return Env.make(tmp_path_factory.mktemp("sweep_check"), HF_HUB_OFFLINE="1")


def _refused(cli: Env, *args: str) -> list[str]:
    """Runs a sweep that must stop before it starts: its stderr lines, after checking that nothing of
    a started sweep exists."""
    sweep_dir = cli.tmp / "sweep"
    proc = cli.run(*args, f"tracking.uri={cli.uri}", f"hydra.sweep.dir={sweep_dir}", check=False)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert not Path(cli.uri.removeprefix("sqlite:///")).exists()  # no store, so no MLflow run
    assert not sweep_dir.exists() and not (cli.tmp / "multirun").exists()  # no job folder, no launch
    return proc.stderr.strip().splitlines()


def _refused_here(cli: Env, *args: str) -> list[str]:
    """The same check in this process (Env.sweep_check): its lines, after checking it stops the sweep
    with exit 2. That nothing of the sweep is made before it: the process tests above and below."""
    code, lines = cli.sweep_check(*args, f"tracking.uri={cli.uri}")
    assert code == 2, lines
    return lines


def test_no_slide_folder_is_one_line_for_the_six_jobs(cli: Env) -> None:
    missing = cli.tmp / "no_such_folder"
    lines = _refused_here(cli, *BRIEF, f"paths.wsi_root={missing}")
    assert lines == [
        f"run_eval: paths.wsi_root={missing}: folder not found; set paths.wsi_root=... or GIANT_WSI_ROOT "
        "(dry_run=true lists what is missing) (every one of the 6 sweep jobs)"
    ]


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_no_csv_is_one_line_for_the_six_jobs(cli: Env) -> None:
    slides = cli.tmp / "slides"
    slides.mkdir(exist_ok=True)
    (line,) = _refused(cli, *BRIEF, f"paths.wsi_root={slides}")
    assert line.startswith("run_eval: could not download MultiPathQA.csv"), line
    assert line.endswith("(every one of the 6 sweep jobs)"), line


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_a_dry_run_sweep_without_its_csv_says_so_once(cli: Env) -> None:
    """A dry run of the sweep fails on its shared question file as the run does: once, before any job
    (issue 42: it printed the same error once per job)."""
    slides = cli.tmp / "slides"
    slides.mkdir(exist_ok=True)
    (line,) = _refused(cli, *BRIEF, f"paths.wsi_root={slides}", "dry_run=true")
    assert line.startswith("run_eval: could not download MultiPathQA.csv"), line
    assert line.endswith("(every one of the 6 sweep jobs)"), line


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_a_dry_run_sweep_leaves_nothing_in_mlflow(cli: Env) -> None:
    """Its reports stay in the job folders: no store, no parent run, no MLflow address printed."""
    sweep_dir = cli.tmp / "dry_sweep"
    proc = cli.run(
        "-m", "provider=random", "dataset=demo", "agent.max_steps=1,2", "dry_run=true",
        f"tracking.uri={cli.uri}", f"hydra.sweep.dir={sweep_dir}",
    )  # fmt: skip
    assert "dry-run sweep: 2 cells priced" in proc.stdout
    assert sorted(path.parent.name for path in sweep_dir.glob("*/dry_run.json")) == ["0", "1"]
    assert not Path(cli.uri.removeprefix("sqlite:///")).exists()
    assert "http" not in proc.stdout + proc.stderr


def test_slides_missing_per_task_name_each_task_s_jobs(cli: Env) -> None:
    """The CSV is there and the folder too, but it holds no slide: one line per task (its example
    slide differs), each naming that task's jobs by the overrides that set them apart."""
    demo = build_demo(cli.tmp / "cache" / "demo")
    empty = cli.tmp / "empty_slides"
    empty.mkdir(exist_ok=True)
    lines = _refused_here(
        cli, "-m", "dataset=demo", f"dataset.csv_path={demo.csv_path}", f"dataset.wsi_root={empty}",
        "dataset.benchmark=demo_shapes,demo_count", "agent.max_steps=1,2",
    )  # fmt: skip
    assert len(lines) == 2, lines
    for line, (task, first) in zip(lines, (("demo_shapes", 0), ("demo_count", 2)), strict=True):
        assert line.startswith(f"run_eval: no slide of this job was found under dataset.wsi_root={empty}")
        jobs = f"#{first} dataset.benchmark={task} agent.max_steps=1, #{first + 1} dataset.benchmark={task} "
        assert line.endswith(f"(2 of 4 sweep jobs: {jobs}agent.max_steps=2)"), line


def test_odd_task_files_stop_the_sweep_before_it_starts_with_their_problem_lists(cli: Env) -> None:
    """An answer `²` and a 5,000-byte slide name crashed each job mid-sweep (the check's exception was a
    Hydra warning): now each file's problem list, exit 2, before any job starts."""
    demo = build_demo(cli.tmp / "cache" / "demo")
    slide = next(path for path in demo.wsi_root.rglob("*") if path.is_file())
    grade = cli.tmp / "grade.csv"
    grade.write_text(f"slide,question,options,answer\n{slide},Grade?,,\u00b2\n", encoding="utf-8")
    named = cli.tmp / "named.csv"
    named.write_text(f"slide,question,options,answer\n{'x' * 5000}.svs,Grade?,,1\n", encoding="utf-8")
    lines = _refused_here(cli, "-m", "dataset=custom", f"dataset.path={grade},{named}", "provider=random")
    text = "\n".join(lines)
    assert f"run_eval: dataset.path={grade}: 1 problem(s)" in text
    assert "row 1, column answer: '\u00b2' is not a label 0..5" in text
    assert f"run_eval: dataset.path={named}: 1 problem(s)" in text
    assert "row 1, column slide: " in text and "has a file name of 5,004 bytes" in text


def test_a_data_check_that_fails_unforeseen_stops_the_sweep_on_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Not a warning and a sweep of crashing jobs: the exception becomes the sweep's problem line."""
    from hydra import compose, initialize_config_dir

    from giant.cli import sweep_check
    from giant.config import CONF_DIR, RunSettings

    def broken(settings: RunSettings) -> None:
        raise KeyError("row")

    monkeypatch.setattr(sweep_check, "check_data", broken)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        settings = RunSettings.from_config(compose("config", [f"paths.wsi_root={tmp_path}"]))
    (line,) = sweep_check.sweep_problems([(["limit=1"], settings)])
    assert line.startswith("the data check failed (KeyError: 'row'); this is a bug") and "limit=1" in line


def test_failed_jobs_are_one_line_per_cause() -> None:
    def outcome(job: int, code: int, message: str) -> JobOutcome:
        return JobOutcome(
            job=job,
            code=code,
            message=message,
            overrides=["limit=2", f"agent.max_steps={job}"],
            output_dir="",
        )

    missing = "dataset.csv_path=/x.csv: file not found"
    outcomes = [outcome(0, 2, missing), outcome(1, 2, missing), outcome(2, 0, "ok"), outcome(3, 4, "budget")]
    assert failure_lines(outcomes) == [
        f"2 of 4 sweep jobs did not complete: #0 agent.max_steps=0, #1 agent.max_steps=1 (exit 2: {missing})",
        "1 of 4 sweep jobs did not complete: #3 agent.max_steps=3 (exit 4: budget)",
    ]
    assert failure_lines([outcome(0, 0, "ok")]) == []


def test_a_job_mlflow_did_not_take_is_untracked_with_its_records_on_disk() -> None:
    """Exit 6 (EXIT_UNTRACKED): the job completed and its folder has everything; only the tracking
    server missed its end. Not a failure of the sweep's status, and its line says where the records are,
    though its MLflow run stayed RUNNING (the server never heard the end)."""
    from mlflow.entities import Run, RunData, RunInfo, RunTag

    from giant.cli.callbacks import jobs_status, sweep_status
    from giant.errors import EXIT_UNTRACKED
    from giant.tracking.names import OUTPUT_DIR_TAG

    message = "MLflow at http://127.0.0.1:5000 did not answer for 60 s ...: the job's records are in /out/1"
    untracked = JobOutcome(
        job=1, code=EXIT_UNTRACKED, message=message, overrides=["s=1"], output_dir="/out/1"
    )
    complete = JobOutcome(job=0, code=0, message="complete", overrides=["s=0"], output_dir="/out/0")
    assert untracked.status == "untracked"
    assert failure_lines([complete, untracked]) == [
        f"1 of 2 sweep jobs completed with records on disk, not in MLflow: #1 s=1 (exit 6: {message})"
    ]
    info = RunInfo("r1", "1", "user", "RUNNING", 0, None, "active")
    running = Run(info, RunData(tags=[RunTag(OUTPUT_DIR_TAG, "/out/1")]))
    assert jobs_status([running], [complete, untracked]) == {"/out/0": "complete", "/out/1": "untracked"}
    assert sweep_status(["complete", "untracked"]) == "untracked"
    assert sweep_status(["untracked", "incomplete", "complete"]) == "incomplete"
