"""A k-run job in the tables: its vote ("xk") and its per-run mean ("x1", with the per-run bootstrap),
each beside its published row; read from a real MLflow sqlite store filled as a job logs it."""

from __future__ import annotations

import pytest

from giant.record.summary import Bootstrap, Provenance, Summary
from giant.tracking.mlflow_logger import summary_metrics
from giant.tracking.names import (
    PER_RUN_BOOT_MEAN_METRIC,
    PER_RUN_BOOT_STD_METRIC,
    PER_RUN_CI_HIGH_METRIC,
    PER_RUN_CI_LOW_METRIC,
    PER_RUN_MEAN_METRIC,
)
from giant.tracking.tables.formats import cost_markdown, to_markdown
from giant.tracking.tables.load import load_runs
from giant.tracking.tables.rows import build_table
from giant.tracking.tables.versus_paper import comparison_markdown
from tests.helpers.runs import log_job

TASKS = ("tcga", "gtex", "panda", "tcga_slidebench", "tcga_expert_vqa")
PATCH = {"agent.patch_count": "30", "agent.patch_size": "224"}


def _boot(mean: float, std: float, half: float) -> Bootstrap:
    return Bootstrap(
        point=mean, mean=mean, std=std, ci_low=mean - half, ci_high=mean + half, replicates=1000, seed=0
    )


def _summary(task: str, vote: Bootstrap, per_run: Bootstrap | None, k: int = 5) -> Summary:
    return Summary(
        benchmark=task,
        metric_name="accuracy",
        complete=True,
        n_items=100,
        n_scored=100,
        runs_per_item=k,
        metric=vote,
        accuracy=vote.point,
        balanced_accuracy=vote.point,
        per_run=[per_run.point] * k if per_run else [],
        per_run_mean=per_run.point if per_run else None,
        per_run_bootstrap=per_run,
        provenance=Provenance(run_key="k", config_hash="c", dataset_hash="d"),
    )


def log_summary_job(exp: str, summary: Summary, *, mode: str, **kw: object) -> str:
    """A job run whose metrics are summary_metrics(summary): the writer's names, as the loader reads
    them (the cell shows the bootstrap mean, so the test's figures are the means)."""
    metrics = summary_metrics(summary)
    return log_job(
        exp,
        task=summary.benchmark,
        mode=mode,
        k=summary.runs_per_item,
        mean=metrics["metric_boot_mean"],
        std=metrics["metric_boot_std"],
        ci=(metrics["metric_ci_low"], metrics["metric_ci_high"]),
        extra=metrics,
        **kw,  # type: ignore[arg-type]
    )


def _lines_after(text: str, first: str, count: int) -> list[str]:
    """The line that starts with `first` and the `count` - 1 lines after it."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    return lines[start : start + count]


def test_summary_metrics_log_the_per_run_bootstrap_only_with_k_runs() -> None:
    with_boot = summary_metrics(_summary("tcga", _boot(0.3, 0.03, 0.06), _boot(0.31, 0.032, 0.061)))
    assert with_boot[PER_RUN_MEAN_METRIC] == 0.31
    assert (with_boot[PER_RUN_BOOT_MEAN_METRIC], with_boot[PER_RUN_BOOT_STD_METRIC]) == (0.31, 0.032)
    assert with_boot[PER_RUN_CI_LOW_METRIC] == pytest.approx(0.249)
    assert with_boot[PER_RUN_CI_HIGH_METRIC] == pytest.approx(0.371)
    single = summary_metrics(_summary("tcga", _boot(0.3, 0.03, 0.06), None, k=1))
    assert not {PER_RUN_MEAN_METRIC, PER_RUN_BOOT_MEAN_METRIC, PER_RUN_CI_LOW_METRIC} & set(single)
    per_run_names = {PER_RUN_BOOT_MEAN_METRIC, PER_RUN_BOOT_STD_METRIC, PER_RUN_CI_LOW_METRIC}
    halted = _summary("tcga", _boot(0.3, 0.03, 0.06), _boot(0.31, 0.032, 0.061))
    stopped = summary_metrics(halted.model_copy(update={"setup_failure": "fatal"}))
    assert not (per_run_names | {PER_RUN_CI_HIGH_METRIC}) & set(stopped)  # scores: not logged when halted


# Per task: (vote mean, per-run mean), fractions; the std is a tenth of the mean, the interval +- 2 std.
GIANT = {
    "tcga": (0.30, 0.33),
    "gtex": (0.61, 0.52),
    "panda": (0.25, 0.23),
    "tcga_slidebench": (0.59, 0.59),
    "tcga_expert_vqa": (0.62, 0.58),
}
THUMBNAIL = {"tcga": 0.10, "gtex": 0.37, "panda": 0.12, "tcga_slidebench": 0.55, "tcga_expert_vqa": 0.50}
PATCH_MEANS = {"tcga": 0.13, "gtex": 0.44, "panda": 0.21, "tcga_slidebench": 0.50, "tcga_expert_vqa": 0.45}


def _pair(vote: float, per_run: float) -> tuple[Bootstrap, Bootstrap]:
    return _boot(vote, vote / 10, vote / 5), _boot(per_run, per_run / 10, per_run / 5)


@pytest.fixture
def table1_sweep(mlflow_store: tuple[str, str]) -> str:
    """The 15 jobs of `experiment=table1`, 5 runs per item each, as they log their summaries."""
    _, exp = mlflow_store
    for task in TASKS:
        log_summary_job(exp, _summary(task, *_pair(*GIANT[task])), mode="giant")
        log_summary_job(
            exp, _summary(task, *_pair(THUMBNAIL[task] + 0.02, THUMBNAIL[task])), mode="thumbnail", thumb=1024
        )
        log_summary_job(
            exp,
            _summary(task, *_pair(PATCH_MEANS[task] + 0.03, PATCH_MEANS[task])),
            mode="patch",
            params=PATCH,
        )
    return exp


def test_a_table1_sweep_sets_ours_beside_every_published_row_giant_runs(table1_sweep: str) -> None:
    records = load_runs()
    assert len(records) == 30  # each k-run job: its vote and its per-run mean
    table = build_table(records)
    assert [row.method for row in table.rows] == [
        "thumbnail",
        "thumbnail x5",
        "patch",
        "patch x5",
        "giant",
        "giant x5",
    ]
    text = comparison_markdown(table)
    ours_vs_published = text.split("## Published Table 1")[0]
    print(ours_vs_published)  # the sample in the change's report
    assert _lines_after(ours_vs_published, "| thumbnail |", 4) == [
        "| thumbnail | gpt-5 | 10.0 ± 1.0 | 37.0 ± 3.7 | 12.0 ± 1.2 | 55.0 ± 5.5 | 50.0 ± 5.0 |",
        "| paper: Thumbnail 1024 px | gpt-5 | 9.2 ± 1.9 | 36.5 ± 3.4 | 12.2 ± 2.2 | 54.8 ± 3.5 "
        "| 50.0 ± 4.4 |",
        "| difference (points) |  | +0.8 | +0.5 | -0.2 | +0.2 | +0.0 |",
        "| published inside our 95% interval? |  | yes [8.0, 12.0] | yes [29.6, 44.4] | yes [9.6, 14.4] "
        "| yes [44.0, 66.0] | yes [40.0, 60.0] |",
    ]
    assert _lines_after(ours_vs_published, "| patch |", 2)[1] == (
        "| paper: Patch (30 x 224, vote) | gpt-5 | 12.8 ± 2.1 | 43.7 ± 2.4 | 21.3 ± 2.4 | - | - |"
    )
    assert _lines_after(ours_vs_published, "| giant |", 4) == [
        "| giant | gpt-5 | 33.0 ± 3.3 | 52.0 ± 5.2 | 23.0 ± 2.3 | 59.0 ± 5.9 | 58.0 ± 5.8 |",
        "| paper: GIANT x1 (T=20, S=1000) | gpt-5 | 32.3 ± 3.5 | 53.7 ± 3.4 | 23.2 ± 2.3 | 58.9 ± 3.5 "
        "| 57.0 ± 4.5 |",
        "| difference (points) |  | +0.7 | -1.7 | -0.2 | +0.1 | +1.0 |",
        "| published inside our 95% interval? |  | yes [26.4, 39.6] | yes [41.6, 62.4] | yes [18.4, 27.6] "
        "| yes [47.2, 70.8] | yes [46.4, 69.6] |",
    ]
    assert _lines_after(ours_vs_published, "| giant x5 |", 4) == [
        "| giant x5 | gpt-5 | 30.0 ± 3.0 | 61.0 ± 6.1 | 25.0 ± 2.5 | 59.0 ± 5.9 | 62.0 ± 6.2 |",
        "| paper: GIANT x5 (vote) | gpt-5 | 29.3 ± 3.3 | 60.7 ± 3.2 | 25.4 ± 2.0 | 59.4 ± 3.4 "
        "| 62.5 ± 4.4* |",
        "| difference (points) |  | +0.7 | +0.3 | -0.4 | -0.4 | -0.5 |",
        "| published inside our 95% interval? |  | yes [24.0, 36.0] | yes [48.8, 73.2] | yes [20.0, 30.0] "
        "| yes [47.2, 70.8] | yes [49.6, 74.4] |",
    ]
    # the thumbnail and patch votes have no published row; TITAN and SlideChat only in the paper's table
    assert "| thumbnail x5 |" not in ours_vs_published and "| patch x5 |" not in ours_vs_published
    assert "TITAN" not in ours_vs_published and "| TITAN (zero-shot) |" in text


def test_a_thumbnail_k_run_job_matches_the_thumbnail_row_by_its_per_run_mean(
    mlflow_store: tuple[str, str],
) -> None:
    _, exp = mlflow_store
    vote, per_run = _boot(0.40, 0.035, 0.07), _boot(0.37, 0.034, 0.068)
    run_id = log_summary_job(exp, _summary("gtex", vote, per_run), mode="thumbnail", thumb=1024)
    x1, x5 = sorted(load_runs(), key=lambda r: r.runs_per_item)
    assert (x1.run_id, x1.runs_per_item, x1.per_run_mean_of) == (run_id, 1, 5)
    assert (x1.mean, x1.std, x1.ci_low, x1.ci_high) == pytest.approx((0.37, 0.034, 0.302, 0.438))
    assert (x5.runs_per_item, x5.per_run_mean_of, x5.mean) == (5, None, 0.40)
    text = comparison_markdown(build_table([x1, x5]))
    assert _lines_after(text, "| thumbnail |", 4) == [
        "| thumbnail | gpt-5 | - | 37.0 ± 3.4 | - | - | - |",
        "| paper: Thumbnail 1024 px | gpt-5 | 9.2 ± 1.9 | 36.5 ± 3.4 | 12.2 ± 2.2 | 54.8 ± 3.5 "
        "| 50.0 ± 4.4 |",
        "| difference (points) |  | - | +0.5 | - | - | - |",
        "| published inside our 95% interval? |  | - | yes [30.2, 43.8] | - | - | - |",
    ]
    assert "| thumbnail x5 |" not in text


def test_a_k_run_job_logged_before_the_per_run_bootstrap_is_its_vote_alone(
    mlflow_store: tuple[str, str],
) -> None:
    """An older k-run job has per_run_mean but no bootstrap of it: no x1 row (no std, no interval to
    show), its vote row as before."""
    _, exp = mlflow_store
    log_job(exp, task="tcga", k=5, mean=0.3, std=0.03, ci=(0.24, 0.36), extra={PER_RUN_MEAN_METRIC: 0.31})
    [record] = load_runs()
    assert (record.runs_per_item, record.per_run_mean_of, record.mean) == (5, None, 0.3)
    text = comparison_markdown(build_table([record]))
    assert "| giant x5 | gpt-5 | 30.0 ± 3.0 |" in text and "| paper: GIANT x5 (vote) |" in text
    assert "paper: GIANT x1" not in text


def test_the_newer_of_a_one_run_job_and_a_k_run_job_fills_the_x1_cell(mlflow_store: tuple[str, str]) -> None:
    """Newest wins, as for any two runs of a cell: here the one-run job, then the 5-run job that
    resumes it (logged later), then a one-run job again."""
    _, exp = mlflow_store
    log_job(exp, task="tcga", mean=0.30, std=0.03)
    table = build_table(load_runs())
    assert [row.method for row in table.rows] == ["giant"] and table.superseded == 0

    per_run = {PER_RUN_BOOT_MEAN_METRIC: 0.33, PER_RUN_BOOT_STD_METRIC: 0.02}
    log_job(exp, task="tcga", k=5, mean=0.35, std=0.025, extra=per_run)  # no per-run interval: "-"
    table = build_table(load_runs())
    assert [row.method for row in table.rows] == ["giant", "giant x5"] and table.superseded == 1
    assert "| giant | gpt-5 | 33.0 ± 2.0 | - | - | - | - |" in to_markdown(table)
    inside = _lines_after(comparison_markdown(table), "| giant |", 4)[3]
    assert inside == "| published inside our 95% interval? |  | - | - | - | - | - |"

    log_job(exp, task="tcga", mean=0.28, std=0.03)
    assert "| giant | gpt-5 | 28.0 ± 3.0 | - | - | - | - |" in to_markdown(build_table(load_runs()))


def test_the_per_run_row_costs_one_run_per_item_and_leaves_the_tiers_to_the_vote(
    mlflow_store: tuple[str, str],
) -> None:
    _, exp = mlflow_store
    tiers = {"calls_paid": 50, "calls_flex": 10, "cost_usd": 1.0, "cost_flex_usd": 0.1}
    per_run = {PER_RUN_BOOT_MEAN_METRIC: 0.33, PER_RUN_BOOT_STD_METRIC: 0.02}
    log_job(
        exp, task="tcga", k=5, mean=0.35, std=0.025, n_items=10, n_scored=9, cost=0.1, extra=tiers | per_run
    )
    text = cost_markdown(build_table(load_runs()))
    assert "| giant | gpt-5 | $0.0200/item, - | - | - | - | - |" in text  # one run's share, failed unknown
    assert "| giant x5 | gpt-5 | $0.1000/item, 1/10 failed | - | - | - | - |" in text
    tier_lines = [line for line in text.split("billing tier")[1].splitlines() if "| TCGA |" in line]
    assert [line.split(" | ")[0] for line in tier_lines] == ["| giant x5"]  # the job's spend, once
