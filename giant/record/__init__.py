"""The job record: the one reader and writer of a job folder, and the typed records it holds.

Every other module reads and writes a job's files through here (modelled on inspect_ai's log
module: one owner of the files, typed records), so a file's name, its format and how an older
format is read back are decided in one place:

    <out_dir>/
      results.jsonl          ResultRecord lines (results.py): appended durably, read back tolerantly
      summary.json           Summary (giant.record.summary)
      resolved_config.json   the settings' record
      predictions.csv  confusion_matrix.png  dataset_defects.json  report.html  dry_run.json
      .hydra/                Hydra's config.yaml, overrides.yaml, hydra.yaml
      trajectories/<safe key>/run<k>/
        trajectory.json  trajectory.html  requests.jsonl  images
    <sweep dir>/mlflow_sweep.json   a sweep's MLflow parent run, read by its jobs
"""

from giant.record.folder import (
    has_trajectory,
    read_resolved_config,
    read_summary,
    read_trajectory,
    write_dry_run,
    write_resolved_config,
    write_summary,
    write_trajectory,
)
from giant.record.layout import (
    DRY_RUN_FILE,
    OVERVIEWS_DIR,
    REQUESTS_FILE,
    RESULTS_FILE,
    SWEEP_FILE,
    TRAJECTORIES_DIR,
    TRAJECTORY_FILE,
    TRAJECTORY_PAGE,
    JobLayout,
    trajectory_dir,
)
from giant.record.results import (
    RUNNER_ERROR,
    SKIPPED,
    UNPARSEABLE,
    RecordStatus,
    ResultRecord,
    ResultsWriter,
    RunnerStatus,
    latest_by_slot,
    read_results,
    write_results,
)

__all__ = [
    "DRY_RUN_FILE",
    "OVERVIEWS_DIR",
    "REQUESTS_FILE",
    "RESULTS_FILE",
    "RUNNER_ERROR",
    "SKIPPED",
    "SWEEP_FILE",
    "TRAJECTORIES_DIR",
    "TRAJECTORY_FILE",
    "TRAJECTORY_PAGE",
    "UNPARSEABLE",
    "JobLayout",
    "RecordStatus",
    "ResultRecord",
    "ResultsWriter",
    "RunnerStatus",
    "has_trajectory",
    "latest_by_slot",
    "read_resolved_config",
    "read_results",
    "read_summary",
    "read_trajectory",
    "trajectory_dir",
    "write_dry_run",
    "write_resolved_config",
    "write_results",
    "write_summary",
    "write_trajectory",
]
