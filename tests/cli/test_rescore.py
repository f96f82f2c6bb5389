"""scripts/rescore.py through the real CLI: a finished job scored again from its recorded answers.

A user CSV in the MultiPathQA format puts three PANDA questions on the demo's synthetic slides
(ISUP truth 0, 0 and 2); the scripted provider answers `{"isup_grade": null}` to each. Read as grade
0 (the shipped panda_null_as_zero=true) two of three are right (balanced accuracy 0.5); read as no
answer, none is. The script file is deleted before any re-score: building the provider would fail.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from giant.config import RunOptions, shipped
from giant.core import Item
from giant.data.demo import build_demo
from giant.data.multipathqa import CSV_COLUMNS
from giant.eval.rescore_records import rescore_records
from giant.record import ResultRecord
from giant.tracking.names import RESCORE_TAG, ROLE_TAG
from giant.tracking.tables.rows import RunRecord, latest_per_row_and_task
from tests.helpers.cli import MAKE_TABLES, RESCORE, Env, clean_env

TRUTH = ("0", "0", "2")
NULL_ANSWER = '<response>{"isup_grade": null}</response>'


@dataclass
class Job:
    cli: Env
    folder: Path
    run_id: str


def _panda_csv(tmp: Path) -> tuple[Path, Path]:
    demo = build_demo(tmp / "cache" / "demo")
    with demo.csv_path.open(newline="") as f:
        count = [row for row in csv.DictReader(f) if row["benchmark_name"] == "demo_count"]
    rows = [
        row | {"benchmark_name": "panda", "answer": truth} for row, truth in zip(count, TRUTH, strict=False)
    ]
    path = tmp / "panda.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path, demo.wsi_root


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Env:
    """No API key in the environment: a re-score must not need one."""
    tmp = tmp_path_factory.mktemp("rescore")
    env = clean_env(
        "OPENAI_", "ANTHROPIC_", GIANT_CACHE_DIR=str(tmp / "cache"), GIANT_OUTPUT_DIR=str(tmp / "outputs")
    )
    return Env(tmp, env)


@pytest.fixture(scope="module")
def job(cli: Env) -> Job:
    csv_path, wsi_root = _panda_csv(cli.tmp)
    script = cli.tmp / "script.jsonl"
    script.write_text(json.dumps({"reasoning": "benign", "action": {"type": "answer", "text": NULL_ANSWER}}))
    folder = cli.tmp / "job"
    run_id = cli.evaluate(  # the source job, in-process: the re-score is what runs as a command line
        folder,
        "provider=scripted",
        f"provider.script={script}",
        "dataset=panda",
        f"dataset.csv_path={csv_path}",
        f"dataset.wsi_root={wsi_root}",
        "agent.max_steps=2",
        "bootstrap_replicates=100",
    )
    script.unlink()  # from here on, a provider built from the recorded settings would fail
    return Job(cli, folder, run_id)


def _rescore(job: Job, source: str, name: str, *extra: str) -> tuple[Path, dict]:
    """The re-score scripts/rescore.py runs, in this process (its exit code and line: the last test)."""
    out = job.cli.tmp / name
    job.cli.rescore(out, f"source={source}", *extra, f"tracking.uri={job.cli.uri}")
    return out, json.loads((out / "summary.json").read_text())


def _rescore_run(job: Job, out: Path):
    client = job.cli.client()
    [run] = client.search_runs(
        [client.get_experiment_by_name("giant").experiment_id], f"tags.output_dir = '{out}'"
    )
    return run


def test_rescore_from_the_folder_reads_null_as_no_answer(job: Job) -> None:
    before = json.loads((job.folder / "summary.json").read_text())
    assert before["panda_null_as_zero"] is True
    assert before["metric"]["point"] == pytest.approx(0.5) and before["n_scored"] == 3

    out, after = _rescore(
        job, str(job.folder), "from_folder", "panda_null_as_zero=false", "bootstrap_replicates=50"
    )
    assert after["panda_null_as_zero"] is False
    assert after["metric"]["point"] == 0.0 and after["n_scored"] == 0
    assert after["counts_by_status"] == {"unparseable": 3}
    assert after["metric"]["replicates"] == 50
    assert after["provenance"] == before["provenance"]
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["label"] for r in records] == [None, None, None]
    assert all('"isup_grade": null' in r["prediction"] for r in records)  # the recorded answers

    source = job.cli.client().get_run(job.run_id)
    run = _rescore_run(job, out)
    tags, params = run.data.tags, run.data.params
    assert tags[RESCORE_TAG] == job.run_id
    assert tags[ROLE_TAG] == "job"
    for tag in ("dataset", "agent_mode", "T", "S", "provider", "model", "runs_per_item", "sweep_id"):
        assert tags[tag] == source.data.tags[tag], tag
    assert params["panda_null_as_zero"] == "False" and params["bootstrap_replicates"] == "50"
    changed = {"panda_null_as_zero", "bootstrap_replicates"}
    same = {k: v for k, v in source.data.params.items() if k not in changed and not k.startswith("tracking.")}
    assert same == {k: params[k] for k in same}
    assert run.data.metrics["metric"] == 0.0 and run.data.metrics["status_unparseable"] == 3
    assert source.data.metrics["metric"] == pytest.approx(0.5)
    artifacts = {a.path for a in job.cli.client().list_artifacts(run.info.run_id)}
    assert {"results.jsonl", "summary.json", "predictions.csv", "confusion_matrix.png"} <= artifacts


def test_rescore_from_the_run_id_and_tables_use_it(job: Job) -> None:
    out, after = _rescore(job, job.run_id, "from_run", "panda_null_as_zero=false")
    assert after["metric"]["point"] == 0.0 and after["metric"]["replicates"] == 100  # kept from the source
    run = _rescore_run(job, out)
    assert run.data.tags[RESCORE_TAG] == job.run_id
    assert run.data.params["panda_null_as_zero"] == "False"

    tables = job.cli.tmp / "tables"
    proc = job.cli.run("--tracking-uri", job.cli.uri, "--out", str(tables), "--no-log", script=MAKE_TABLES)
    with (tables / "table1.csv").open(newline="") as f:
        [row] = list(csv.DictReader(f))
    assert row["panda"].startswith("0.0 ±")  # the re-score's cell, not the source's 50.0
    assert "replaced by the newest" in proc.stdout


@pytest.mark.subprocess_job
def test_a_bad_source_is_one_line_and_exit_2(tmp_path: Path) -> None:
    cli = Env(tmp_path, clean_env(GIANT_OUTPUT_DIR=str(tmp_path / "outputs")))
    missing = tmp_path / "no_such_job"
    proc = cli.run(f"source={missing}", f"tracking.uri={cli.uri}", script=RESCORE, check=False)
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert str(missing) in line and "source=<a job folder" in line


def _record(run_id: str, start: int, mean: float, rescored_at: int = 0) -> RunRecord:
    return RunRecord(
        run_id=run_id, task="panda", agent_mode="giant", model="m", mean=mean, std=0.0,
        start_time=start, rescored_at=rescored_at,
    )  # fmt: skip


def test_a_rescore_replaces_its_source_but_not_a_newer_run() -> None:
    source, newer = _record("source", 100, 0.5), _record("newer", 200, 0.7)
    rescore = _record("rescore", 100, 0.1, rescored_at=300)  # logged last, in its source's place
    assert [r.run_id for r in latest_per_row_and_task([source, rescore])[0]] == ["rescore"]
    assert [r.run_id for r in latest_per_row_and_task([source, newer, rescore])[0]] == ["newer"]


def test_patch_answers_are_read_and_voted_again() -> None:
    item = Item(
        benchmark="panda", benchmark_id="1", image_path="a.svs", prompt="?", truth=2, metric="accuracy"
    )
    common = {"key": item.key, "benchmark": "panda", "seed": 0, "truth": 2}
    patches = ['{"isup_grade": null}', '{"isup_grade": 2}', None]
    voted = ResultRecord(  # as the runner wrote it with panda_null_as_zero=true: a 0-2 tie, 0 first
        **common, run_index=0, answers=patches, label=0, method="patch_vote",
        patch_labels=[0, 2, None], status="answered",
    )  # fmt: skip
    failed = ResultRecord(**common, run_index=1, status="provider_error", reason="timeout")
    scoring = shipped(RunOptions).scoring
    again = rescore_records([voted, failed], [item], scoring.model_copy(update={"panda_null_as_zero": False}))
    assert (again[0].label, again[0].correct, again[0].patch_labels) == (2, True, [None, 2, None])
    assert again[1] == failed  # no answer was recorded: nothing to score
    back = rescore_records(again, [item], scoring)
    assert back[0].label == 0 and back[0].correct is False
