"""Issue 9 cases 10 and 11: the job folder is the same record with or without MLflow, and data
defects are part of it (summary.json, dataset_defects.json, the MLflow run).

A user CSV in the MultiPathQA format over the demo's synthetic slides: four tcga_slidebench count
questions (balanced accuracy, so a confusion matrix is drawn), one of which repeats the prompt of
the tcga_expert_vqa row with the same id, the defect the loader reports. The job runs it twice
in-process (giant.evaluate, the job of scripts/run_eval.py), into a real sqlite MLflow store and with
tracking.enabled=false.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

import giant
from giant.data.demo import build_demo
from giant.data.multipathqa import CSV_COLUMNS
from giant.tracking.params import to_params

DEFECTIVE_ID = "2"


@dataclass
class Runs:
    tracked: Path
    untracked: Path
    uri: str


def _user_csv(tmp: Path) -> tuple[Path, Path]:
    demo = build_demo(tmp / "cache" / "demo")
    with demo.csv_path.open(newline="") as f:
        count = [row for row in csv.DictReader(f) if row["benchmark_name"] == "demo_count"][:4]
    rows = [row | {"benchmark_name": "tcga_slidebench"} for row in count]
    defective = next(row for row in rows if row["benchmark_id"] == DEFECTIVE_ID)
    expert = defective | {"benchmark_name": "tcga_expert_vqa", "metric_type": "accuracy"}
    path = tmp / "user.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows([*rows, expert])
    return path, demo.wsi_root


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    tmp = tmp_path_factory.mktemp("record")
    csv_path, wsi_root = _user_csv(tmp)
    uri = f"sqlite:///{tmp / 'store' / 'mlflow.db'}"
    common = [
        "provider=random",
        "dataset=tcga_slidebench",
        f"dataset.csv_path={csv_path}",
        f"dataset.wsi_root={wsi_root}",
        "agent.max_steps=2",
        "resume=false",
        f"tracking.uri={uri}",
        f"paths.cache_dir={tmp / 'cache'}",
    ]
    folders = {}
    for name, extra in (("tracked", []), ("untracked", ["tracking.enabled=false"])):
        folders[name] = tmp / name
        summary = giant.evaluate([*common, *extra], output_dir=folders[name])
        assert summary is not None and summary.complete
    return Runs(folders["tracked"], folders["untracked"], uri)


def _files(folder: Path) -> set[str]:
    """Every file's relative path (.hydra/ included: both runs have it)."""
    return {str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file()}


@pytest.mark.slow
def test_without_mlflow_the_job_folder_holds_the_same_files(runs: Runs) -> None:
    untracked = _files(runs.untracked)
    assert untracked == _files(runs.tracked)
    for name in ("predictions.csv", "confusion_matrix.png", "resolved_config.json", "dataset_defects.json"):
        assert name in untracked
    pages = {path for path in untracked if path.endswith("/trajectory.html")}
    assert len(pages) == len({path for path in untracked if path.endswith("/trajectory.json")}) == 4


@pytest.mark.slow
def test_defects_are_in_summary_json_and_the_defects_file(runs: Runs) -> None:
    for folder in (runs.tracked, runs.untracked):
        summary = json.loads((folder / "summary.json").read_text())
        assert summary["n_dataset_defects"] == 1
        [defect] = summary["dataset_defects"]
        assert (defect["benchmark"], defect["benchmark_id"]) == ("tcga_slidebench", DEFECTIVE_ID)
        assert defect["resolution"] == "kept" and "tcga_expert_vqa" in defect["description"]
        assert json.loads((folder / "dataset_defects.json").read_text()) == summary["dataset_defects"]


@pytest.mark.slow
def test_mlflow_params_are_the_resolved_config(runs: Runs) -> None:
    """One record of the config: the params are resolved_config.json flattened, key for key."""
    client = MlflowClient(runs.uri)
    [run] = client.search_runs([client.get_experiment_by_name("giant").experiment_id])
    resolved = json.loads((runs.tracked / "resolved_config.json").read_text())
    assert run.data.params == to_params(resolved, secrets=[], max_length=250)
    assert resolved["agent"]["max_steps"] == 2 and resolved["resume"] is False  # keys as on the command line
    assert json.loads((runs.untracked / "resolved_config.json").read_text())["tracking"]["enabled"] is False


@pytest.mark.slow
def test_defects_are_a_metric_and_an_artifact_of_the_mlflow_run(runs: Runs, tmp_path: Path) -> None:
    client = MlflowClient(runs.uri)
    experiment = client.get_experiment_by_name("giant")
    [run] = client.search_runs([experiment.experiment_id])
    assert run.data.tags["output_dir"] == str(runs.tracked)
    assert run.data.metrics["n_dataset_defects"] == 1
    local = client.download_artifacts(run.info.run_id, "dataset_defects.json", str(tmp_path))
    summary = json.loads((runs.tracked / "summary.json").read_text())
    assert json.loads(Path(local).read_text()) == summary["dataset_defects"]
    logged = {item.path for item in client.list_artifacts(run.info.run_id)}
    assert {"predictions.csv", "confusion_matrix.png", "summary.json", "dataset_defects.json"} <= logged
