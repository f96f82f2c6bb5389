"""A report: every table and figure written to a folder, and kept as the artifacts of an MLflow run
tagged giant.role=report beside the runs it summarises (linked to its sweep by the sweep_id tag)."""

from __future__ import annotations

from pathlib import Path

import mlflow
from pydantic import BaseModel

from giant.tracking.mlflow_logger import mark_model_development
from giant.tracking.names import REPORT_ROLE, ROLE_TAG, SWEEP_ID_TAG
from giant.tracking.tables.figures import scaling_figure, thumbnail_figure
from giant.tracking.tables.formats import cells_csv, cost_markdown, to_csv, to_latex, to_markdown
from giant.tracking.tables.navigation import navigation_figure, navigation_markdown
from giant.tracking.tables.rows import RunRecord, Table, build_table, latest_per_row_and_task
from giant.tracking.tables.versus_paper import comparison_markdown


class Report(BaseModel):
    table: Table
    files: list[Path]
    skipped_figures: list[str]  # figures without data (no series with two x values)
    run_id: str | None = None  # the MLflow "report" run


def write_report(records: list[RunRecord], out_dir: Path, *, published: bool = False) -> Report:
    out_dir.mkdir(parents=True, exist_ok=True)
    table = build_table(records)
    files = []
    for name, text in (
        ("table1.md", to_markdown(table)),
        ("table1.tex", to_latex(table)),
        ("table1.csv", to_csv(table)),
        ("table1_cost.md", cost_markdown(table)),
        ("table1_cells.csv", cells_csv(table)),
    ):
        (out_dir / name).write_text(text, encoding="utf-8")
        files.append(out_dir / name)
    if published:
        (out_dir / "table1_vs_published.md").write_text(comparison_markdown(table), encoding="utf-8")
        files.append(out_dir / "table1_vs_published.md")
    latest, _ = latest_per_row_and_task(records)
    navigation = navigation_markdown(table, latest)  # only where the runs logged navigation metrics
    if navigation is not None:
        (out_dir / "navigation.md").write_text(navigation, encoding="utf-8")
        files.append(out_dir / "navigation.md")
    drawn = navigation_figure(table, latest, out_dir / "navigation.png")
    if drawn is None:
        (out_dir / "navigation.png").unlink(missing_ok=True)
    else:
        files.append(drawn)
    skipped = []
    for name, make in (("scaling.png", scaling_figure), ("thumbnail_resolution.png", thumbnail_figure)):
        made = make(latest, out_dir / name)
        if made is None:
            (out_dir / name).unlink(missing_ok=True)  # a stale figure from an earlier report would mislead
            skipped.append(name)
        else:
            files.append(made)
    return Report(table=table, files=files, skipped_figures=skipped)


def log_report(report: Report, *, experiment: str, sweep_id: str | None = None) -> str:
    """Keep the rendered files as artifacts of a run tagged giant.role=report (and the sweep's id when
    a sweep id is given), so the UI shows the table beside the runs it summarises. A run of its own,
    linked by that tag: as a child of the sweep it would be listed among the sweep's jobs."""
    client = mlflow.MlflowClient()
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None  # load_runs found runs in it
    mark_model_development(client, exp)  # an experiment of an older giant: the runs table in the UI
    tags = {ROLE_TAG: REPORT_ROLE}
    if sweep_id:
        tags[SWEEP_ID_TAG] = sweep_id
    with mlflow.start_run(experiment_id=exp.experiment_id, run_name="report", tags=tags) as run:
        for path in report.files:
            mlflow.log_artifact(str(path), artifact_path="report")
    return run.info.run_id
