"""The MLflow metrics a job writes, pinned name by name and value by value: stored runs hold these names,
and `make tables` reads runs logged long ago by them, so a writer built another way must write exactly
these. Two jobs: a summary with every part filled (distinct values, so a swapped name shows), logged by
JobRun into a real store, and a real demo job (giant.evaluate, the command line's job)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

import giant
from giant.data.defects import Defect
from giant.record.logged import read_logged
from giant.record.summary import Bootstrap, Magnification, NavigationSummary, Provenance, Summary, Totals
from giant.tracking.mlflow_logger import JobRun


def _boot(base: float) -> Bootstrap:
    return Bootstrap(
        point=base,
        mean=base + 0.001,
        std=base + 0.002,
        ci_low=base + 0.003,
        ci_high=base + 0.004,
        replicates=9,
        seed=1,
    )


def full_summary(**changes: object) -> Summary:
    """A summary with every part that reaches MLflow filled, each value distinct."""
    summary = Summary(
        benchmark="demo_shapes",
        metric_name="accuracy",
        complete=True,
        n_slides_missing=3,
        setup_causes={"slide_missing": 3},
        n_items=40,
        n_scored=30,
        n_skipped=2,
        runs_per_item=2,
        metric=_boot(0.51),
        metric_scored_only=0.61,
        accuracy=0.52,
        balanced_accuracy=0.53,
        per_run=[0.41, 0.42],
        per_run_mean=0.415,
        per_run_std=0.005,
        per_run_bootstrap=_boot(0.71),
        counts_by_status={"answered": 30, "slide_missing": 3, "timeout": 7},
        totals=Totals(
            input_tokens=1001,
            output_tokens=202,
            reasoning_tokens=33,
            cached_input_tokens=250,
            cache_write_tokens=44,
            calls_replayed=5,
            replayed_cost_usd=0.06,
            calls_flex=7,
            calls_batch=8,
            cost_flex_usd=0.09,
            cost_batch_usd=0.1,
            cost_usd=2.0,
            calls=55,
            crops=66,
            steps_mean=3.5,
            steps_max=9,
            crops_per_item=2.5,
            wall_s=77.0,
            items_per_hour=88.0,
            active_s=99.0,
            gpu_cost_usd=1.25,
            output_tokens_per_s=12.5,
            calls_per_min=13.5,
        ),
        magnification=Magnification(images=10, unknown=1, finest_mpp=0.25, median_mpp=0.5, coarsest_mpp=8.0),
        provenance=Provenance(run_key="k", config_hash="c", dataset_hash="d"),
        dataset_defects=[Defect(benchmark="demo_shapes", benchmark_id="1", description="x")],
        navigation=NavigationSummary(
            item_runs=38,
            steps=4.5,
            crops=3.25,
            finest_mpp=0.3,
            median_mpp=0.9,
            tissue=0.61,
            coverage=0.22,
            revisits=0.11,
            fine_rate=0.55,
            first_fine_step=2.5,
            mpp_by_step=[4.0, None, 1.0],
            annotated=20,
            not_annotated=18,
            hit_rate=_boot(0.81),
            first_hit_step=1.75,
            on_target=0.33,
            accuracy_hit=0.66,
            accuracy_no_hit=0.44,
            hit_rate_by_step=[0.2, 0.6],
        ),
    )
    return summary.model_copy(update=changes)


SCORES = {
    "metric": 0.51,
    "metric_boot_mean": 0.511,
    "metric_boot_std": 0.512,
    "metric_ci_low": 0.513,
    "metric_ci_high": 0.514,
    "metric_scored_only": 0.61,
    "accuracy": 0.52,
    "balanced_accuracy": 0.53,
    "per_run_mean": 0.415,
    "per_run_std": 0.005,
    "per_run_mean_boot_mean": 0.711,
    "per_run_mean_boot_std": 0.712,
    "per_run_mean_ci_low": 0.713,
    "per_run_mean_ci_high": 0.714,
}
OTHERS = {
    "n_items": 40,
    "n_scored": 30,
    "n_skipped": 2,
    "n_dataset_defects": 1,
    "n_slides_missing": 3,
    "steps_mean": 3.5,
    "steps_max": 9,
    "crops_per_item": 2.5,
    "mpp_finest": 0.25,
    "mpp_median": 0.5,
    "tokens_input": 1001,
    "tokens_output": 202,
    "tokens_reasoning": 33,
    "tokens_cached": 250,
    "tokens_cache_write": 44,
    "cost_usd": 2.0,
    "cost_per_item_usd": 0.05,
    "cache_hit_ratio": 250 / 1001,
    "calls_paid": 50,
    "calls_replayed": 5,
    "calls_flex": 7,
    "calls_batch": 8,
    "cost_flex_usd": 0.09,
    "cost_batch_usd": 0.1,
    "cost_replayed_usd": 0.06,
    "wall_s": 77.0,
    "items_per_hour": 88.0,
    "active_s": 99.0,
    "gpu_cost_usd": 1.25,
    "output_tokens_per_s": 12.5,
    "calls_per_min": 13.5,
    "status_answered": 30,
    "status_slide_missing": 3,
    "status_timeout": 7,
    "setup_slide_missing": 3,
    "nav_item_runs": 38,
    "nav_steps": 4.5,
    "nav_crops": 3.25,
    "nav_finest_mpp": 0.3,
    "nav_median_mpp": 0.9,
    "nav_tissue": 0.61,
    "nav_coverage": 0.22,
    "nav_revisits": 0.11,
    "nav_fine_rate": 0.55,
    "nav_first_fine_step": 2.5,
    "nav_annotated": 20,
    "nav_not_annotated": 18,
    "nav_hit_rate": 0.81,
    "nav_hit_rate_ci_low": 0.813,
    "nav_hit_rate_ci_high": 0.814,
    "nav_first_hit_step": 1.75,
    "nav_on_target": 0.33,
    "nav_accuracy_hit": 0.66,
    "nav_accuracy_no_hit": 0.44,
}
# name -> [(step, value)] of the metrics logged one step per run index or per crop
STEPS = {
    "run_metric": [(0, 0.41), (1, 0.42)],
    "nav_mpp_by_step": [(1, 4.0), (3, 1.0)],
    "nav_hit_rate_by_step": [(1, 0.2), (2, 0.6)],
}


def _logged(mlflow_store: tuple[str, str], summary: Summary) -> tuple[dict[str, float], dict[str, list]]:
    uri, experiment_id = mlflow_store
    client = MlflowClient(uri)
    run_id = client.create_run(experiment_id).info.run_id
    JobRun(client, run_id, settings=None).log_summary(summary)  # type: ignore[arg-type]  # unused by log_summary
    metrics = client.get_run(run_id).data.metrics
    steps = {
        name: sorted((m.step, m.value) for m in client.get_metric_history(run_id, name))
        for name in metrics
        if len(client.get_metric_history(run_id, name)) > 1 or name == "run_metric"
    }
    return metrics, steps


def test_a_full_summary_is_logged_under_the_pinned_names_and_values(mlflow_store: tuple[str, str]) -> None:
    metrics, steps = _logged(mlflow_store, full_summary())
    last = {name: values[-1][1] for name, values in STEPS.items()}
    assert metrics == pytest.approx({**SCORES, **OTHERS, **last})
    assert steps.keys() == STEPS.keys()
    for name, pairs in STEPS.items():
        assert [step for step, _ in steps[name]] == [step for step, _ in pairs], name
        assert [value for _, value in steps[name]] == pytest.approx([value for _, value in pairs]), name


def test_a_run_halted_on_a_setup_failure_logs_no_score_and_no_steps(mlflow_store: tuple[str, str]) -> None:
    metrics, steps = _logged(mlflow_store, full_summary(setup_failure="fatal: bad key", stop_cause="auth"))
    assert metrics == pytest.approx(OTHERS)
    assert steps == {}


def test_a_summary_without_its_optional_parts_logs_none_of_theirs(mlflow_store: tuple[str, str]) -> None:
    bare = full_summary(
        magnification=None,
        navigation=None,
        per_run_bootstrap=None,
        per_run=[],
        per_run_mean=None,
        per_run_std=None,
    )
    bare = bare.model_copy(
        update={
            "metric_scored_only": None,
            "totals": bare.totals.model_copy(update={"cost_usd": None, "gpu_cost_usd": None}),
        }
    )
    metrics, steps = _logged(mlflow_store, bare)
    gone = {"metric_scored_only", "cost_usd", "cost_per_item_usd", "gpu_cost_usd", "mpp_finest", "mpp_median"}
    gone |= {name for name in {**SCORES, **OTHERS} if name.startswith(("nav_", "per_run_"))}
    expected = {name: value for name, value in {**SCORES, **OTHERS}.items() if name not in gone}
    assert metrics == pytest.approx(expected)
    assert steps == {}


# What a demo job (random provider, one task, two runs per item) logs: its names, as stored runs hold them
# (the random model never lands on a marker: no first hit step, no accuracy among hits; no GPU price)
DEMO_NAMES = {
    "accuracy",
    "active_s",
    "balanced_accuracy",
    "cache_hit_ratio",
    "calls_batch",
    "calls_flex",
    "calls_paid",
    "calls_per_min",
    "calls_replayed",
    "cost_batch_usd",
    "cost_flex_usd",
    "cost_per_item_usd",
    "cost_replayed_usd",
    "cost_usd",
    "crops_per_item",
    "items_per_hour",
    "metric",
    "metric_boot_mean",
    "metric_boot_std",
    "metric_ci_high",
    "metric_ci_low",
    "metric_scored_only",
    "mpp_finest",
    "mpp_median",
    "n_dataset_defects",
    "n_items",
    "n_scored",
    "n_skipped",
    "n_slides_missing",
    "nav_accuracy_no_hit",
    "nav_annotated",
    "nav_coverage",
    "nav_crops",
    "nav_fine_rate",
    "nav_finest_mpp",
    "nav_first_fine_step",
    "nav_hit_rate",
    "nav_hit_rate_by_step",
    "nav_hit_rate_ci_high",
    "nav_hit_rate_ci_low",
    "nav_item_runs",
    "nav_median_mpp",
    "nav_mpp_by_step",
    "nav_not_annotated",
    "nav_on_target",
    "nav_revisits",
    "nav_steps",
    "nav_tissue",
    "output_tokens_per_s",
    "per_run_mean",
    "per_run_mean_boot_mean",
    "per_run_mean_boot_std",
    "per_run_mean_ci_high",
    "per_run_mean_ci_low",
    "per_run_std",
    "run_metric",
    "status_answered",
    "steps_max",
    "steps_mean",
    "tokens_cache_write",
    "tokens_cached",
    "tokens_input",
    "tokens_output",
    "tokens_reasoning",
    "wall_s",
}


@pytest.mark.slow
def test_a_demo_job_logs_the_pinned_names(tmp_path: Path, empty_store_db: Path) -> None:
    """The job scripts/run_eval.py runs, in-process (giant.evaluate: tests/test_evaluate.py shows the
    command line logs what it logs), into a copy of the migrated empty store."""
    db = tmp_path / "store" / "mlflow.db"
    db.parent.mkdir()
    shutil.copyfile(empty_store_db, db)
    overrides = ["provider=random", "dataset=demo", "dataset.benchmark=demo_shapes", "runs_per_item=2"]
    overrides += ["limit=4", "bootstrap_replicates=20", f"paths.cache_dir={tmp_path / 'cache'}"]
    giant.evaluate([*overrides, f"tracking.uri=sqlite:///{db}"], output_dir=tmp_path / "job")
    client = MlflowClient(f"sqlite:///{db}")
    (run,) = client.search_runs([client.get_experiment_by_name("giant").experiment_id])
    assert set(run.data.metrics) == DEMO_NAMES


def _at(record: object, path: str) -> object:
    for attr in path.split("."):
        record = getattr(record, attr)
    return record


def test_the_reader_gives_back_each_field_the_writer_logged(mlflow_store: tuple[str, str]) -> None:
    """What the tables read (read_logged over the stored run) is the summary's own values, by path."""
    summary = full_summary()
    metrics, _ = _logged(mlflow_store, summary)
    logged = read_logged(Summary, metrics)
    nav = {path: value for path, value in logged.items() if path.startswith("navigation.")}
    counts = {path: value for path, value in logged.items() if path.startswith(("counts_by", "setup_causes"))}
    plain = {path: value for path, value in logged.items() if path not in nav | counts and path != "per_run"}
    assert plain == pytest.approx({path: _at(summary, path) for path in plain})
    assert {"metric.mean", "per_run_bootstrap.ci_high", "totals.calls_paid", "cost_per_item"} <= plain.keys()
    statuses = {"counts_by_status.answered": 30, "counts_by_status.slide_missing": 3}
    assert counts == statuses | {"counts_by_status.timeout": 7, "setup_causes.slide_missing": 3}
    assert logged["per_run"] == 0.42  # a by-step list: its last step
    assert nav["navigation.hit_rate_ci_low"] == pytest.approx(0.813) and nav["navigation.coverage"] == 0.22
    assert len(logged) == len(metrics)  # every metric is some field's
