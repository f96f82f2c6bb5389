"""The sweep's end names where each job's model looked (issue 42): hit rate with its interval, finest
µm/px, coverage, revisits, from the jobs' MLflow metrics in a real store, and the file with them all."""

from __future__ import annotations

from pathlib import Path

from mlflow.tracking import MlflowClient

from giant.tracking.sweep_result import navigation_lines


def test_each_job_s_navigation_is_one_line_under_the_file_that_has_them(
    mlflow_store: tuple[str, str], tmp_path: Path
) -> None:
    uri, experiment = mlflow_store
    client = MlflowClient(uri)
    annotated = client.create_run(experiment, run_name="demo-giant-T5").info.run_id
    for key, value in {
        "nav_item_runs": 8,
        "nav_steps": 4.0,
        "nav_crops": 3.0,
        "nav_finest_mpp": 0.25,
        "nav_coverage": 0.041,
        "nav_revisits": 0.1,
        "nav_annotated": 8,
        "nav_hit_rate": 0.75,
        "nav_hit_rate_ci_low": 0.5,
        "nav_hit_rate_ci_high": 1.0,
    }.items():
        client.log_metric(annotated, key, value)
    plain = client.create_run(experiment, run_name="demo-giant-T1").info.run_id
    client.log_metric(plain, "nav_item_runs", 8)
    client.log_metric(plain, "nav_coverage", 0.0)
    silent = client.create_run(experiment, run_name="old-job").info.run_id  # logged before navigation
    client.log_metric(silent, "metric", 0.5)
    table = tmp_path / "navigation.md"
    table.write_text("# Where the methods looked\n")
    jobs = client.search_runs([experiment])
    assert navigation_lines(jobs, table) == [
        f"where the model looked (all of them in {table}):",
        "  demo-giant-T1: tissue coverage 0.0%",
        "  demo-giant-T5: evidence hit rate 75.0% (95% interval 50.0%–100.0%, 8 annotated item-runs); "
        "finest 0.25 µm/px (median over item-runs); tissue coverage 4.1%; revisits 10.0% of crop area",
    ]
    assert navigation_lines([client.get_run(silent)], table) == []
