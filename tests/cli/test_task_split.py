"""A task file whose tasks are scored by different metrics (docs/custom_tasks.md's own example: an
accuracy task and a balanced_accuracy task) runs in one command: giant runs one job per task, each in
its own folder with its own summary and MLflow run (issue 42). The dry run checks what the run checks,
and a refusal leaves no MLflow run. In-process: giant.evaluate, the job of scripts/run_eval.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

import giant
from giant.errors import ConfigError
from giant.tracking.names import OUTPUT_DIR_TAG
from giant.wsi.synthetic import write_synthetic_slide

# docs/custom_tasks.md's example, with its slides where the test writes them
EXAMPLE = """slide,question,options,answer,id,task,metric
case_01.svs,Which organ is this tissue from?,"[""Liver"", ""Lung"", ""Kidney""]",2,organ-1,organ,accuracy
case_02.svs,Which organ is this tissue from?,"[""Liver"", ""Lung"", ""Kidney""]",Kidney,organ-2,organ,accuracy
case_01.svs,What is the ISUP grade of this biopsy?,,3,grade-1,grade,balanced_accuracy
{absolute},What is the ISUP grade of this biopsy?,,0,grade-2,grade,balanced_accuracy
"""


@pytest.fixture(scope="module")
def slides(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("slides")
    for seed in (1, 2):
        write_synthetic_slide(folder / f"case_0{seed}.svs", 1600, 1200, seed=seed)
    return folder


def _job(tmp: Path, slides: Path, questions: str, *more: str) -> tuple[Path, str]:
    """Run one job in-process as scripts/run_eval.py would (giant.evaluate); its folder and store URI."""
    path = tmp / "my_cohort.csv"
    path.write_text(questions.format(absolute=slides / "case_02.svs"))
    uri = f"sqlite:///{tmp / 'store' / 'mlflow.db'}"
    out = tmp / "job"
    giant.evaluate(
        [
            "provider=random",
            "dataset=custom",
            f"dataset.path={path}",
            f"paths.wsi_root={slides}",
            f"paths.cache_dir={tmp / 'cache'}",
            "agent.max_steps=1",
            f"tracking.uri={uri}",
            *more,
        ],
        output_dir=out,
    )
    return out, uri


@pytest.mark.slow
def test_the_guides_two_task_example_runs_each_task_by_its_metric(
    slides: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, uri = _job(tmp_path, slides, EXAMPLE)
    printed = capsys.readouterr().out
    assert "2 tasks scored by different metrics: one job per task (organ, grade)" in printed
    metrics = {}
    for task in ("organ", "grade"):
        summary = json.loads((out / task / "summary.json").read_text())
        assert summary["benchmark"] == task and summary["n_items"] == 2 and summary["complete"]
        assert (out / task / "report.html").is_file()
        metrics[task] = summary["metric_name"]
        (closing,) = [line for line in printed.splitlines() if line.startswith(f"{task} giant T=1")]
        # the point estimate with its interval, and where the model looked, with units and the file
        assert "(point estimate [95% bootstrap interval];" in closing
        assert "tissue coverage " in closing and "(all in report.html)" in closing
        assert "tissue coverage" in (out / task / "report.html").read_text()
    assert metrics == {"organ": "accuracy", "grade": "balanced_accuracy"}
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("giant").experiment_id])
    assert sorted(run.data.tags[OUTPUT_DIR_TAG] for run in runs) == sorted(
        str(out / task) for task in ("organ", "grade")
    )
    assert {run.info.status for run in runs} == {"FINISHED"}


@pytest.mark.slow
def test_the_dry_run_prices_each_task_and_writes_nothing_to_mlflow(slides: Path, tmp_path: Path) -> None:
    out, _ = _job(tmp_path, slides, EXAMPLE, "dry_run=true")
    assert sorted(path.parent.name for path in out.glob("*/dry_run.json")) == ["grade", "organ"]
    assert not (tmp_path / "store").exists()


def test_a_refused_task_leaves_no_mlflow_run(slides: Path, tmp_path: Path) -> None:
    """One task's slides missing: the whole job is refused before the first task opens a run."""
    broken = EXAMPLE.replace("case_01.svs,What", "gone_1.svs,What").replace("{absolute}", "gone_2.svs")
    with pytest.raises(ConfigError, match=r"gone_1\.svs"):
        _job(tmp_path, slides, broken)
    assert not (tmp_path / "store").exists()
    assert not (tmp_path / "job" / "organ" / "summary.json").exists()


def test_a_missing_key_and_broken_rows_are_reported_together(
    slides: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every missing prerequisite in one pass (issue 42): the key no longer hides the file's problems."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    broken = EXAMPLE.replace('"[""Liver"", ""Lung"", ""Kidney""]",2', '"[""Liver"", ""Lung""",2')
    with pytest.raises(ConfigError) as refused:
        _job(tmp_path, slides, broken, "provider=openai")
    lines = str(refused.value).splitlines()
    assert lines[0].startswith("provider=openai: environment variable OPENAI_API_KEY is unset"), lines
    assert lines[1].endswith("my_cohort.csv: 1 problem(s); fix them and run again"), lines
    assert lines[2].startswith("  row 1, column options: not JSON"), lines
    assert not (tmp_path / "store").exists()


@pytest.mark.slow
def test_chosen_items_of_two_tasks_split_by_task(slides: Path, tmp_path: Path) -> None:
    """item_ids naming one item of each task: each task runs its own, none is refused for the other's."""
    out, _ = _job(tmp_path, slides, EXAMPLE, "dry_run=true", "item_ids=[organ/organ-1,grade/grade-2]")
    for task in ("organ", "grade"):
        report = json.loads((out / task / "dry_run.json").read_text())
        assert report["n_items"] == 1, report
