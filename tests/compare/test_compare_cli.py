"""scripts/compare.py as a subprocess on two real jobs: by folder, by MLflow run id (trajectories
downloaded from the artifacts), by sweep id; its numbers checked against the jobs' own records."""

from __future__ import annotations

import csv
import json
import runpy
from pathlib import Path

import pytest

from giant.compare.stats import mcnemar_exact
from giant.tracking.names import COMPARED_TAG, PARENT_TAG, ROLE_TAG
from tests.compare.conftest import COMPARE, Compared, Sweep
from tests.compare.conftest import run_compare as _compare
from tests.helpers.store import ITEMS

compare_main = runpy.run_path(str(COMPARE))["main"]


def _results(job: Path) -> dict[str, dict]:
    return {r["key"]: r for r in map(json.loads, (job / "results.jsonl").read_text().splitlines())}


def _pair_row(out: Path) -> dict[str, str]:
    with (out / "comparison.csv").open() as f:
        [row] = list(csv.DictReader(f))
    return row


def _check_numbers(sweep: Sweep, out: Path) -> None:
    a, b = (_results(job) for job in sweep.jobs)
    row = _pair_row(out)
    assert int(row["n_common"]) == len(a) == len(b) == ITEMS
    a_only = sum(a[k]["correct"] and not b[k]["correct"] for k in a)
    b_only = sum(b[k]["correct"] and not a[k]["correct"] for k in a)
    assert (int(row["a_right_only"]), int(row["b_right_only"])) == (a_only, b_only)
    assert a_only + b_only > 0  # the fixture must produce flips for the rest to mean anything
    assert float(row["mcnemar_p"]) == pytest.approx(mcnemar_exact(a_only, b_only), rel=1e-5)
    summaries = [json.loads((job / "summary.json").read_text()) for job in sweep.jobs]
    assert float(row["metric_a"]) == pytest.approx(summaries[0]["metric"]["point"])
    assert float(row["metric_b"]) == pytest.approx(summaries[1]["metric"]["point"])
    assert float(row["difference"]) == pytest.approx(
        summaries[1]["metric"]["point"] - summaries[0]["metric"]["point"]
    )
    with (out / "flips.csv").open() as f:
        flips = list(csv.DictReader(f))
    assert len(flips) == a_only + b_only
    for flip in flips:
        assert flip["question"]  # read from the copied trajectory
        for side in ("trajectory_a", "trajectory_b"):
            assert (out / flip[side]).is_file(), flip[side]


@pytest.mark.slow
def test_two_job_folders(sweep: Sweep, compared: Compared) -> None:
    out, proc = compared.out, compared.proc
    _check_numbers(sweep, out)
    assert "Paired unit: one item" in proc.stdout
    assert {p.name for p in out.iterdir()} >= {
        "comparison.md",
        "comparison.tex",
        "comparison.html",
        "flips.csv",
    }
    run_id = proc.stdout.split("logged as MLflow run ")[1].split()[0]
    run = sweep.store.client().get_run(run_id)
    assert run.data.tags[ROLE_TAG] == "comparison"
    assert run.data.tags[COMPARED_TAG] == ",".join(sweep.run_ids)
    # both jobs belong to one sweep: the comparison carries its id, as a run of its own (not a child,
    # which the UI would list among the sweep's jobs)
    assert run.data.tags["sweep_id"] == sweep.sweep_id and PARENT_TAG not in run.data.tags
    row = _pair_row(out)
    metrics = run.data.metrics
    assert metrics["demo_shapes.A_vs_B.difference"] == pytest.approx(float(row["difference"]))
    assert metrics["demo_shapes.A_vs_B.mcnemar_p"] == pytest.approx(float(row["mcnemar_p"]))
    assert metrics["demo_shapes.A_vs_B.n_common"] == ITEMS
    names = {a.path for a in sweep.store.client().list_artifacts(run_id, "comparison")}
    assert {"comparison/comparison.md", "comparison/comparison.html", "comparison/trajectories"} <= names


@pytest.mark.slow
def test_run_ids_read_the_trajectories_from_mlflow(sweep: Sweep, tmp_path: Path) -> None:
    """With the job folders gone, everything comes from the runs' artifacts."""
    moved = sweep.folder.with_name("sweep-moved")
    sweep.folder.rename(moved)
    try:
        out = tmp_path / "cmp"
        _compare(sweep, out, *sweep.run_ids, "--no-log")
        _check_numbers(sweep_with(sweep, moved), out)
    finally:
        moved.rename(sweep.folder)


@pytest.mark.slow
def test_a_second_comparison_into_the_same_folder_replaces_the_first(sweep: Sweep, tmp_path: Path) -> None:
    """Its flipped items' trajectories are this comparison's only, and it says it replaced one."""
    out = tmp_path / "cmp"
    stale = out / "trajectories" / "Z" / "old_item"
    stale.mkdir(parents=True)
    (out / "comparison.md").write_text("an earlier comparison\n")
    proc = _compare(sweep, out, *map(str, sweep.jobs), "--no-log")
    assert f"replaced the comparison that was in {out}" in proc.stdout
    assert not stale.exists()
    _check_numbers(sweep, out)


def sweep_with(sweep: Sweep, moved: Path) -> Sweep:
    jobs = [moved / job.relative_to(sweep.folder) for job in sweep.jobs]
    return Sweep(sweep.store, moved, sweep.sweep_id, jobs, sweep.run_ids)


@pytest.mark.slow
def test_sweep_id_with_filter(sweep: Sweep, tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    _compare(sweep, out, "--sweep-id", sweep.sweep_id, "--filter", "tags.dataset = 'demo_shapes'", "--no-log")
    _check_numbers(sweep, out)
    one = "tags.dataset = 'demo_shapes' and tags.T = '3'"
    proc = _compare(sweep, out, "--sweep-id", sweep.sweep_id, "--filter", one, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "compare: a comparison needs at least two runs, got 1; pass two or more"
    ]


@pytest.mark.slow
def _exit_line(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        compare_main([*args, "--no-log"])
    assert exit_info.value.code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    return line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--filter", "tags.T = '1'", "x", "y"], "compare: --filter narrows the runs of a sweep"),
        (["--replicates", "0", "x", "y"], "compare: --replicates=0: must be at least 1"),
        (["x"], "compare: a comparison needs at least two runs, got 1"),
    ],
)
def test_bad_command_line(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert _exit_line(capsys, *args).startswith(message)


@pytest.mark.slow
def test_unknown_run_id(sweep: Sweep, capsys: pytest.CaptureFixture[str]) -> None:
    line = _exit_line(capsys, "0" * 32, sweep.run_ids[0], "--tracking-uri", sweep.store.uri)
    assert line.startswith("compare: " + "0" * 32 + ": no such MLflow run")
