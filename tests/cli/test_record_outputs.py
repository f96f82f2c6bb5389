"""Issue 9 cases 10 and 11: the job folder is the same record with or without MLflow, and data
defects are part of it (summary.json, dataset_defects.json, the MLflow run).

A user CSV in the MultiPathQA format over the demo's synthetic slides: four tcga_slidebench count
questions (balanced accuracy, so a confusion matrix is drawn), one of which repeats the prompt of
the tcga_expert_vqa row with the same id, the defect the loader reports. The real CLI runs it twice
in subprocesses, into a real sqlite MLflow store and with tracking.enabled=false.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from giant.data.demo import build_demo
from giant.data.multipathqa import CSV_COLUMNS
from giant.tracking.params import to_params

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "run_eval.py"
TIMEOUT = 300
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
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "GIANT_", "HYDRA_"))}
    env.update(
        PYTHONPATH=str(ROOT), GIANT_CACHE_DIR=str(tmp / "cache"), GIANT_OUTPUT_DIR=str(tmp / "outputs")
    )
    uri = f"sqlite:///{tmp / 'store' / 'mlflow.db'}"
    common = [
        "provider=random",
        "dataset=tcga_slidebench",
        f"dataset.csv_path={csv_path}",
        f"dataset.wsi_root={wsi_root}",
        "agent.max_steps=2",
        "resume=false",
        f"tracking.uri={uri}",
    ]
    folders = {}
    for name, extra in (("tracked", []), ("untracked", ["tracking.enabled=false"])):
        folders[name] = tmp / name
        proc = subprocess.run(
            [sys.executable, str(SCRIPT), *common, *extra, f"hydra.run.dir={folders[name]}"],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    return Runs(folders["tracked"], folders["untracked"], uri)


def _files(folder: Path) -> set[str]:
    """Every file's relative path (.hydra/ and the job log included: both runs have them)."""
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
