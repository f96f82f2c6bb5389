"""A job folder's file names and paths, private to giant.record: every other module reads and writes
the folder through giant.record, so a name is spelled here only.

    <out_dir>/
      results.jsonl          one line per finished item-run (giant.record.results)
      summary.json           the metric and its context (giant.eval.summarize)
      predictions.csv        confusion_matrix.png  dataset_defects.json  resolved_config.json
      report.html            the run report a researcher opens first (giant.report)
      overviews/<slide>.html where the runs of one slide looked, on one overview (giant.report)
      dry_run.json           dry runs only
      errors.log             the traceback of each item-run an unclassified exception ended (a bug)
      .hydra/                Hydra's config.yaml, overrides.yaml, hydra.yaml
      trajectories/<safe key>/run<k>/
        trajectory.json  trajectory.html  requests.jsonl  images
    <sweep dir>/mlflow_sweep.json   a sweep's MLflow parent run, read by its jobs
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"
PREDICTIONS_FILE = "predictions.csv"
CONFUSION_FILE = "confusion_matrix.png"
DEFECTS_FILE = "dataset_defects.json"
RESOLVED_CONFIG_FILE = "resolved_config.json"
DRY_RUN_FILE = "dry_run.json"
ERRORS_FILE = "errors.log"
REPORT_FILE = "report.html"
HYDRA_DIR = ".hydra"
HYDRA_FILES = ("config.yaml", "overrides.yaml", "hydra.yaml")
TRAJECTORIES_DIR = "trajectories"
OVERVIEWS_DIR = "overviews"
# inside each trajectory folder
TRAJECTORY_FILE = "trajectory.json"
TRAJECTORY_PAGE = "trajectory.html"
REQUESTS_FILE = "requests.jsonl"
CONFIG_ARTIFACTS = "config"  # the MLflow run's artifact folder of resolved_config.json and Hydra's files
# in a sweep's folder (Hydra's multirun dir, above the job folders): how its jobs find their parent run
SWEEP_FILE = "mlflow_sweep.json"


def safe_key(key: str) -> str:
    """A folder name for an item key ("tcga/TCGA-1" -> "tcga__TCGA-1"), portable across filesystems."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", key.replace("/", "__"))


def trajectory_dir(key: str, run_index: int) -> str:
    """Relative to the output directory (as results.jsonl records it): trajectories/<safe key>/run<k>."""
    return f"{TRAJECTORIES_DIR}/{safe_key(key)}/run{run_index}"


@dataclass(frozen=True)
class JobLayout:
    out_dir: Path

    @property
    def results(self) -> Path:
        return self.out_dir / RESULTS_FILE

    @property
    def summary(self) -> Path:
        return self.out_dir / SUMMARY_FILE

    @property
    def predictions(self) -> Path:
        return self.out_dir / PREDICTIONS_FILE

    @property
    def confusion_matrix(self) -> Path:
        return self.out_dir / CONFUSION_FILE

    @property
    def dataset_defects(self) -> Path:
        return self.out_dir / DEFECTS_FILE

    @property
    def resolved_config(self) -> Path:
        return self.out_dir / RESOLVED_CONFIG_FILE

    @property
    def dry_run(self) -> Path:
        return self.out_dir / DRY_RUN_FILE

    @property
    def errors(self) -> Path:
        return self.out_dir / ERRORS_FILE

    @property
    def report(self) -> Path:
        return self.out_dir / REPORT_FILE

    @property
    def hydra_files(self) -> list[Path]:
        return [self.out_dir / HYDRA_DIR / name for name in HYDRA_FILES]

    @property
    def trajectories(self) -> Path:
        return self.out_dir / TRAJECTORIES_DIR

    @property
    def overviews(self) -> Path:
        return self.out_dir / OVERVIEWS_DIR

    def trajectory(self, key: str, run_index: int) -> Path:
        return self.out_dir / trajectory_dir(key, run_index)

    @classmethod
    def of_trajectory(cls, folder: Path) -> JobLayout | None:
        """The job holding a trajectory folder (<out>/trajectories/<safe key>/run<k>), computed from
        the folder's place, not searched for; None for a folder outside a job (scripts/ask.py's)."""
        folder = folder.resolve()
        if len(folder.parents) < 3 or folder.parents[1].name != TRAJECTORIES_DIR:
            return None
        return cls(folder.parents[2])
