"""The comparison as an MLflow run tagged giant.role=comparison: its files (and the flipped items'
trajectory pages) as artifacts, the compared runs named in tags, and, when every compared run belongs
to one sweep, that sweep's id as a tag: a run of its own, not a child of the sweep's parent run (the UI
would list it among the sweep's jobs)."""

from __future__ import annotations

from pathlib import Path

from giant.compare.pairs import Comparison
from giant.compare.sources import RunData
from giant.config import TrackingSettings
from giant.record import TRAJECTORIES_DIR
from giant.tracking.names import (
    COMPARED_TAG,
    COMPARISON_ROLE,
    DATASET_TAG,
    ROLE_TAG,
    SWEEP_ID_TAG,
)

ARTIFACT_DIR = "comparison"


def pair_metrics(comparison: Comparison) -> dict[str, float]:
    """Per pair `<task>.<A>_vs_<B>.<name>`: the difference and its interval (fractions), the
    discordant counts and the p-values, so comparison runs can be searched and charted."""
    metrics: dict[str, float] = {}
    for pair in comparison.pairs:
        prefix = f"{pair.task}.{pair.a}_vs_{pair.b}"
        values = {
            "difference": pair.difference.point,
            "ci_low": pair.difference.ci_low,
            "ci_high": pair.difference.ci_high,
            "n_common": pair.n_common,
            "a_right_only": pair.a_only_right,
            "b_right_only": pair.b_only_right,
            "mcnemar_p": pair.p_value,
            "p_holm": pair.p_holm,
        }
        metrics.update({f"{prefix}.{name}": float(v) for name, v in values.items() if v is not None})
    return metrics


def log_comparison(
    comparison: Comparison, runs: list[RunData], files: list[Path], out_dir: Path, tracking: TrackingSettings
) -> str:
    from giant.tracking.mlflow_logger import open_experiment

    client, experiment_id = open_experiment(tracking)
    tags = {
        ROLE_TAG: COMPARISON_ROLE,
        COMPARED_TAG: ",".join(run.run_id or str(run.folder or run.where) for run in runs),
        DATASET_TAG: ",".join(dict.fromkeys(run.task for run in runs)),
    }
    sweeps = {run.sweep_id for run in runs}
    if len(sweeps) == 1 and (sweep_id := sweeps.pop()):
        tags[SWEEP_ID_TAG] = sweep_id
    run = client.create_run(experiment_id, run_name="comparison", tags=tags)
    run_id = run.info.run_id
    for name, value in pair_metrics(comparison).items():
        client.log_metric(run_id, name, value)
    for path in files:
        client.log_artifact(run_id, str(path), artifact_path=ARTIFACT_DIR)
    if (out_dir / TRAJECTORIES_DIR).is_dir():
        client.log_artifacts(run_id, str(out_dir / TRAJECTORIES_DIR), f"{ARTIFACT_DIR}/{TRAJECTORIES_DIR}")
    client.set_terminated(run_id)
    return run_id
