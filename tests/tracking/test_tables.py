"""Tables and figures from a real MLflow sqlite store filled through the MLflow API with the tag and
metric names of docs/ARCHITECTURE.md."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import mlflow
import pytest
from PIL import Image

from giant.errors import ConfigError
from giant.tracking.names import PARENT_TAG, ROLE_TAG
from giant.tracking.tables.formats import cells_csv, cost_markdown, to_csv, to_latex, to_markdown
from giant.tracking.tables.load import load_runs
from giant.tracking.tables.report import log_report, write_report
from giant.tracking.tables.rows import build_table
from giant.tracking.tables.versus_paper import comparison_markdown
from tests.helpers.runs import log_job


@pytest.fixture
def filled(mlflow_store: tuple[str, str]) -> str:
    _, exp = mlflow_store
    log_job(exp, task="tcga", mean=0.10, std=0.01)  # older duplicate: replaced by the next run
    log_job(exp, task="tcga", mean=0.351, std=0.034)
    log_job(exp, task="tcga_expert_vqa", mean=0.6, std=0.045)
    log_job(exp, task="tcga_slidebench", mean=0.5, std=0.05, status="incomplete")
    log_job(exp, task="tcga", T=5, mean=0.25, std=0.03)
    log_job(exp, task="tcga", T=1, mean=0.12, std=0.02)
    log_job(exp, task="gtex", mode="thumbnail", mean=0.4, std=0.02, thumb=1024)
    log_job(exp, task="gtex", mode="thumbnail", mean=0.3, std=0.02, thumb=250)
    log_job(exp, task="demo_shapes", mode="random_regions", model="random", mean=0.5, std=0.1)
    log_job(exp, task="tcga", mode="giant", mean=0.9, std=0.0, role="sweep")  # a parent: not a job
    log_job(exp, task="tcga", mode="giant", mean=0.9, std=0.0, role="report")
    log_job(exp, task="panda", mean=0.2, std=0.02, sweep="sw2", k=5)
    return exp


def test_table_rows_columns_and_cells(filled: str) -> None:
    table = build_table(load_runs())
    md = to_markdown(table)
    lines = md.splitlines()
    assert lines[0] == ("| method | model | TCGA | GTEx | PANDA | SlideBenchVQA | ExpertVQA | demo_shapes |")
    # thumbnail size varies within the thumbnail mode, T within giant; S varies nowhere.
    assert "| thumbnail (250 px) | gpt-5 | - | 30.0 ± 2.0 | - | - | - | - |" in lines
    assert "| giant (T=20) | gpt-5 | 35.1 ± 3.4 | - | - | 50.0 ± 5.0† | 60.0 ± 4.5 | - |" in lines
    assert "| giant (T=1) | gpt-5 | 12.0 ± 2.0 | - | - | - | - | - |" in lines
    assert "| giant x5 (T=20) | gpt-5 | - | - | 20.0 ± 2.0 | - | - | - |" in lines
    assert "| random_regions | random | - | - | - | - | - | 50.0 ± 10.0 |" in lines
    methods = [line.split(" | ")[0].removeprefix("| ") for line in lines[2:] if line.startswith("|")]
    assert methods == [
        "thumbnail (250 px)",
        "thumbnail (1024 px)",
        "random_regions",
        "giant (T=1)",
        "giant (T=5)",
        "giant (T=20)",
        "giant x5 (T=20)",
    ]
    assert table.superseded == 1
    assert lines[-1].startswith("† incomplete run")  # the slidebench run stopped early
    assert "90.0" not in md  # sweep and report runs carry no task metric of their own


def test_latex_and_csv(filled: str) -> None:
    table = build_table(load_runs())
    tex = to_latex(table)
    assert "\\begin{tabular}{llcccccc}" in tex
    assert (
        "giant (T=20) & gpt-5 & $35.1 \\pm 3.4$ & - & - & $50.0 \\pm 5.0^{\\dagger}$ & "
        "$60.0 \\pm 4.5$ & - \\\\" in tex
    )
    assert tex.rstrip().endswith("the run's incomplete_reason tag says why.")
    assert "random\\_regions & random" in tex and "demo\\_shapes" in tex
    rows = list(csv.DictReader(io.StringIO(to_csv(table))))
    assert list(rows[0]) == [
        "method",
        "model",
        "tcga",
        "gtex",
        "panda",
        "tcga_slidebench",
        "tcga_expert_vqa",
        "demo_shapes",
    ]
    by_method = {r["method"]: r for r in rows}
    assert by_method["giant (T=5)"]["tcga"] == "25.0 ± 3.0"
    assert by_method["thumbnail (1024 px)"]["gtex"] == "40.0 ± 2.0"


def test_sweep_and_filter_select_runs(filled: str) -> None:
    assert {r.task for r in load_runs(sweep_id="sw2")} == {"panda"}
    assert {r.model for r in load_runs(filter_string="tags.model = 'random'")} == {"random"}
    with pytest.raises(ConfigError, match="make demo"):
        load_runs(sweep_id="nope")
    with pytest.raises(ConfigError, match="no MLflow experiment 'other'"):
        load_runs(experiment="other")


def test_report_files_figures_and_report_run(filled: str, tmp_path: Path) -> None:
    out = tmp_path / "tables"
    report = write_report(load_runs(), out, published=True)
    names = {p.name for p in report.files}
    assert names == {
        "table1.md",
        "table1.tex",
        "table1.csv",
        "table1_vs_published.md",
        "table1_cost.md",
        "table1_cells.csv",
        "scaling.png",
        "thumbnail_resolution.png",
    }
    for png in ("scaling.png", "thumbnail_resolution.png"):
        with Image.open(out / png) as img:
            img.verify()
            assert img.format == "PNG" and img.size[0] > 300
    comparison = (out / "table1_vs_published.md").read_text()
    assert "| paper: GIANT x1 (T=20, S=1000) | gpt-5 | 32.3 ± 3.5 |" in comparison
    assert "| difference (points) |  | +2.8 | - | - | -8.9 | +3.0 |" in comparison  # 35.1-32.3, 60.0-57.0
    assert "| paper: Thumbnail 1024 px | gpt-5 | 9.2 ± 1.9 | 36.5 ± 3.4 |" in comparison
    assert "62.5 ± 4.4*" in comparison and "confirmed by the abstract" in comparison
    assert "| paper: GIANT x5 (vote) | gpt-5 | 29.3 ± 3.3 |" in comparison
    assert "giant (T=5)" not in comparison  # no published run used T=5

    run_id = log_report(report, experiment="giant", sweep_id="sw1")
    run = mlflow.get_run(run_id)
    assert run.data.tags[ROLE_TAG] == "report"
    assert run.data.tags["sweep_id"] == "sw1"
    assert PARENT_TAG not in run.data.tags  # its own run, linked by the tag: not among the sweep's jobs
    logged = {Path(a.path).name for a in mlflow.MlflowClient().list_artifacts(run_id, "report")}
    assert logged == names
    assert load_runs()  # the report run is not read back as a job


def test_figures_skipped_without_two_points(mlflow_store: tuple[str, str], tmp_path: Path) -> None:
    _, exp = mlflow_store
    log_job(exp, task="tcga", mean=0.3, std=0.03)
    out = tmp_path / "t"
    out.mkdir()
    (out / "scaling.png").write_bytes(b"stale")
    report = write_report(load_runs(), out)
    assert set(report.skipped_figures) == {"scaling.png", "thumbnail_resolution.png"}
    assert not (out / "scaling.png").exists()
    assert "| giant | gpt-5 | 30.0 ± 3.0 |" in (out / "table1.md").read_text()


def test_published_rows_match_only_the_published_configurations() -> None:
    from giant.tracking.published import published_row_for

    giant_x1 = published_row_for("giant", 1, {"max_steps": 20, "crop_size": 1000})
    assert giant_x1 is not None and giant_x1.method == "GIANT x1 (T=20, S=1000)"
    assert published_row_for("giant", 1, {"max_steps": 10, "crop_size": 1000}) is None
    patch = published_row_for("patch", 1, {"patch_count": 30, "patch_size": 224})
    assert patch is not None and patch.method == "Patch (30 x 224, vote)"
    assert published_row_for("patch", 1, {"patch_count": 10, "patch_size": 224}) is None
    assert published_row_for("patch", 1, {}) is None  # settings unknown: no claim
    assert published_row_for("thumbnail", 1, {"thumbnail_size": 2000}) is None
    thumbnail = published_row_for("thumbnail", 1, {"thumbnail_size": 1024})
    assert thumbnail is not None and thumbnail.method == "Thumbnail 1024 px"
    assert published_row_for("retired_mode", 1, {"max_steps": 20, "crop_size": 1000}) is None


def test_cost_per_item_and_failed_items_per_cell(mlflow_store: tuple[str, str]) -> None:
    _, exp = mlflow_store
    log_job(exp, task="tcga", mean=0.3, std=0.03, n_items=221, n_scored=214, cost=0.0375)
    log_job(exp, task="gtex", mean=0.5, std=0.03, n_items=191, n_scored=191)  # a model without a price
    log_job(exp, task="panda", mean=0.2, std=0.02)  # logged before these metrics existed
    table = build_table(load_runs())
    lines = cost_markdown(table).splitlines()
    assert lines[0] == "| method | model | TCGA | GTEx | PANDA | SlideBenchVQA | ExpertVQA |"
    assert lines[2] == (
        "| giant | gpt-5 | $0.0375/item, 7/221 failed | cost unknown, 0/191 failed "
        "| cost unknown, - | - | - |"
    )
    rows = {r["task"]: r for r in csv.DictReader(io.StringIO(cells_csv(table)))}
    assert set(rows) == {"tcga", "gtex", "panda"}
    assert (rows["tcga"]["n_items"], rows["tcga"]["failed"], rows["tcga"]["cost_per_item_usd"]) == (
        "221",
        "7",
        "0.0375",
    )
    assert rows["gtex"]["cost_per_item_usd"] == "" and rows["panda"]["failed"] == ""
    assert rows["tcga"]["mean"] == "30.0" and rows["tcga"]["run_id"]


def test_calls_and_cost_per_billing_tier(mlflow_store: tuple[str, str]) -> None:
    """The cost table splits each cell's paid calls and dollars into standard, flex and batch (the
    run's calls_paid, calls_flex, calls_batch, cost_usd, cost_flex_usd, cost_batch_usd)."""
    _, exp = mlflow_store
    tiers = {"calls_paid": 10, "calls_flex": 6, "calls_batch": 1, "cost_usd": 0.5}
    tiers |= {"cost_flex_usd": 0.2, "cost_batch_usd": 0.05}
    log_job(exp, task="tcga", mean=0.3, std=0.03, n_items=5, n_scored=5, cost=0.1, extra=tiers)
    log_job(exp, task="gtex", mean=0.5, std=0.03)  # logged before the tier metrics existed
    table = build_table(load_runs())
    text = cost_markdown(table)
    assert "| method | model | task | calls standard | calls flex | calls batch | cost standard |" in text
    assert "| giant | gpt-5 | TCGA | 3 | 6 | 1 | $0.2500 | $0.2000 | $0.0500 |" in text
    assert "GTEx |" not in text.split("billing tier")[1]  # no split logged: no line
    rows = {r["task"]: r for r in csv.DictReader(io.StringIO(cells_csv(table)))}
    tcga = [rows["tcga"][c] for c in ("calls_standard", "calls_flex", "calls_batch")]
    assert tcga == ["3", "6", "1"]
    assert (rows["tcga"]["cost_standard_usd"], rows["tcga"]["cost_batch_usd"]) == ("0.25", "0.05")
    assert rows["gtex"]["calls_flex"] == "" and rows["gtex"]["cost_standard_usd"] == ""


def test_published_value_inside_or_outside_our_interval(mlflow_store: tuple[str, str]) -> None:
    """GIANT x1 at T=20, S=1000 is published as TCGA 32.3, GTEx 53.7, PANDA 23.2."""
    _, exp = mlflow_store
    log_job(exp, task="tcga", mean=0.35, std=0.03, ci=(0.30, 0.41))
    log_job(exp, task="gtex", mean=0.45, std=0.03, ci=(0.40, 0.50))
    log_job(exp, task="panda", mean=0.2, std=0.02)  # no interval logged: no claim
    text = comparison_markdown(build_table(load_runs()))
    assert (
        "| published inside our 95% interval? |  | yes [30.0, 41.0] | no [40.0, 50.0] | - | - | - |" in text
    )
