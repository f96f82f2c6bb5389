"""Sweeps through `launcher=submitit_slurm` on a real one-node SLURM cluster, logging to a real MLflow
server: each Hydra job is a SLURM array task, and its record must end up where a cluster user looks.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from mlflow.entities import Run

from giant.record import ResultRecord, read_results
from tests.slurm.conftest import Report, SlurmStack, job_logs

pytestmark = pytest.mark.slow


def sweep_runs(slurm: SlurmStack, sweep_dir: Path) -> tuple[Run, list[Run]]:
    """The sweep's parent run and its child runs, as the MLflow server has them."""
    parent_id = json.loads((sweep_dir / "mlflow_sweep.json").read_text())["parent_run_id"]
    client = slurm.client()
    parent = client.get_run(parent_id)
    children = client.search_runs(
        [parent.info.experiment_id], f"tags.`mlflow.parentRunId` = '{parent_id}'", max_results=100
    )
    return parent, children


def results(child: Run) -> list[ResultRecord]:
    return read_results(Path(child.data.tags["output_dir"]) / "results.jsonl")


def slurm_job_id(child: Run) -> str:
    """The SLURM job id Hydra recorded for the job (submitit reads it from SLURM_JOB_ID and friends)."""
    hydra = yaml.safe_load((Path(child.data.tags["output_dir"]) / ".hydra" / "hydra.yaml").read_text())
    return str(hydra["hydra"]["job"]["id"])


def requeues(sweep_dir: Path) -> int:
    """How often submitit requeued a job: its log (the job's stdout) has one line per `scontrol requeue`."""
    logs = (sweep_dir / ".submitit").glob("*/*_log.out")
    lines = (line for path in logs for line in path.read_text(errors="replace").splitlines())
    return sum(line.startswith("submitit INFO") and " - Requeued job " in line for line in lines)


@pytest.mark.subprocess_job
def test_every_slurm_job_finishes_its_child_run_under_the_parent(slurm: SlurmStack, report: Report) -> None:
    started = time.monotonic()
    sweep_dir = slurm.sweep(
        "sweep",
        "provider=random",
        "dataset=demo",
        "agent.max_steps=1,2",
        "limit=3",
        "hydra.launcher.timeout_min=10",
    )
    seconds = time.monotonic() - started
    parent, children = sweep_runs(slurm, sweep_dir)
    assert parent.info.status == "FINISHED" and parent.data.tags["status"] == "complete"
    assert parent.data.metrics["n_jobs"] == 2 and parent.data.metrics["n_failed"] == 0
    assert sorted(child.data.tags["T"] for child in children) == ["1", "2"]
    submitted = {path.name for path in (sweep_dir / ".submitit").iterdir() if path.name != "%j"}
    for child in children:
        assert child.info.status == "FINISHED", child.data.tags
        assert child.data.tags["status"] == "complete"
        assert child.data.tags["sweep_id"] == parent.info.run_id
        assert child.data.metrics["n_items"] == 3
        assert Path(child.data.tags["output_dir"]).parent == sweep_dir
        assert slurm_job_id(child) in submitted  # the job ran as that SLURM array task
        assert len({record.key for record in results(child)}) == len(results(child)) == 3
    assert len({slurm_job_id(child) for child in children}) == 2
    records = [record for child in children for record in results(child)]
    report(
        "sweep (random provider, T=1,2, 3 items each)",
        jobs=len(children),
        requeues=requeues(sweep_dir),
        items=len(records),
        calls=sum(record.calls for record in records),
        seconds=round(seconds, 1),
    )


# The demo accuracy task's 8 items, one 6 s call each, one at a time: 48 s of work. With a 1-minute limit
# and signal_delay_s=15, SLURM's warning comes 15-45 s into the job (cluster.py), before the last item
# starts: the first run is always cut short, and each later run has ~30 s for the items left.
SLOW_ITEMS, SLOW_CALL_S = 8, 6.0
SLOW_ANSWER = {
    "reasoning": "slow look",
    "action": {"type": "answer", "text": '<response>{"answer": 1}</response>'},
    "sleep": SLOW_CALL_S,
}


@pytest.mark.subprocess_job
def test_a_job_past_its_time_limit_is_requeued_and_completes_every_item_once(
    slurm: SlurmStack, report: Report
) -> None:
    script = slurm.tmp / "slow_answer.jsonl"
    script.write_text(json.dumps(SLOW_ANSWER) + "\n")
    started = time.monotonic()
    sweep_dir = slurm.sweep(
        "requeue",
        "provider=scripted",
        f"provider.script={script}",
        "dataset=demo",
        "concurrency=1",
        "hydra.launcher.timeout_min=1",
        "hydra.launcher.signal_delay_s=15",  # USR2 15-45 s into the job, >= 30 s before the kill
    )
    seconds = time.monotonic() - started
    parent, children = sweep_runs(slurm, sweep_dir)
    n_requeues = requeues(sweep_dir)  # with the shipped max_num_timeout: typically 1, at most 3
    assert n_requeues >= 1, job_logs(sweep_dir)
    assert "run_eval: stopped by SIGUSR2" in job_logs(sweep_dir, lines=10_000)  # a clean stop, not a kill
    assert parent.info.status == "FINISHED" and parent.data.tags["status"] == "complete"
    assert parent.data.metrics["n_jobs"] == 1 and parent.data.metrics["n_failed"] == 0
    assert len(children) == 1  # the requeued job reattached its run instead of starting another
    child = children[0]
    assert child.info.status == "FINISHED" and child.data.tags["status"] == "complete", child.data.tags
    assert child.data.metrics["n_items"] == SLOW_ITEMS
    lines = (Path(child.data.tags["output_dir"]) / "results.jsonl").read_text().splitlines()
    keys = [json.loads(line)["key"] for line in lines]
    assert len(keys) == len(set(keys)) == SLOW_ITEMS, keys  # every item exactly once
    records = results(child)
    assert [record.status for record in records] == ["answered"] * SLOW_ITEMS  # none cut short
    sweeps = slurm.client().search_runs(
        [parent.info.experiment_id], f"params.sweep_dir = '{sweep_dir}'", max_results=10
    )
    assert [run.info.run_id for run in sweeps] == [parent.info.run_id]  # the parent was not recreated
    report(
        "requeue (1-minute limit, 48 s of work)",
        jobs=len(children),
        requeues=n_requeues,
        items=len(records),
        calls=sum(record.calls for record in records),
        seconds=round(seconds, 1),
    )
