"""Sweeps through `launcher=submitit_slurm` on a real one-node SLURM cluster, logging to a real MLflow
server: each Hydra job is a SLURM array task, and its record must end up where a cluster user looks.
"""

from __future__ import annotations

import getpass
import json
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from mlflow.entities import Run

from giant.record import ResultRecord, read_results
from tests.slurm.conftest import SWEEP_TIMEOUT_S, Report, SlurmStack, job_logs

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


# The demo accuracy task's 8 items, one 5.5 s call each, one at a time: 44 s of work against a 1-minute
# limit. With signal_delay_s=1, SLURM's warning comes at its first time-limit test at least 29 s into the
# job and the kill a test (30 s) later (cluster.py). The job is submitted held and released 35-40 s before
# a test, so the warning comes 33-42 s in: after the job's own handler is in place, before its last item.
# The requeued job starts 10-20 s after the warning (8 s of grace at most, the 5 s hold) and its own
# warning comes a test later, leaving it ~40 s for the few items left.
SLOW_ITEMS, SLOW_CALL_S = 8, 5.5
RELEASE_LEAD_S = (35.0, 40.0)
SLOW_ANSWER = {
    "reasoning": "slow look",
    "action": {"type": "answer", "text": '<response>{"answer": 1}</response>'},
    "sleep": SLOW_CALL_S,
}


def held_job(slurm: SlurmStack) -> str | None:
    """The array job submitted with --hold and not released yet, if any."""
    for line in slurm.cluster.run("squeue", "-h", "-o", "%F %r", check=False).splitlines():
        job, _, reason = line.partition(" ")
        if reason.strip() == "JobHeldUser":
            return job
    return None


def release_before_a_check(slurm: SlurmStack, sweep: Future[Path]) -> float:
    """Wait for the sweep's held job and release it RELEASE_LEAD_S before a time-limit test; the lead."""
    deadline = time.monotonic() + SWEEP_TIMEOUT_S
    while (job := held_job(slurm)) is None:
        if sweep.done():
            sweep.result()  # the sweep's own failure, if it failed
            raise AssertionError("the sweep ended without a held job to release")
        assert time.monotonic() < deadline, "no held job appeared"
        time.sleep(0.5)
    low, high = RELEASE_LEAD_S
    check = slurm.cluster.next_time_limit_check(after=time.time() + low)
    time.sleep(max(0.0, check - high - time.time()))
    lead = check - time.time()
    slurm.cluster.run("scontrol", "release", job)
    return lead


@pytest.mark.subprocess_job
def test_a_job_past_its_time_limit_is_requeued_and_completes_every_item_once(
    slurm: SlurmStack, report: Report
) -> None:
    script = slurm.tmp / "slow_answer.jsonl"
    script.write_text(json.dumps(SLOW_ANSWER) + "\n")
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=1) as pool:
        sweep = pool.submit(
            slurm.sweep,
            "requeue",
            "provider=scripted",
            f"provider.script={script}",
            "dataset=demo",
            "concurrency=1",
            "hydra.launcher.timeout_min=1",
            "hydra.launcher.signal_delay_s=1",  # the warning at a time-limit test, still 30 s before the kill
            "+hydra.launcher.additional_parameters.hold=true",  # released at a known time before a test
        )
        try:
            lead = release_before_a_check(slurm, sweep)
        except BaseException:
            slurm.cluster.run("scancel", "--user", getpass.getuser(), check=False)  # the sweep ends too
            raise
        sweep_dir = sweep.result()
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
        "requeue (1-minute limit, 44 s of work)",
        released_s_before_a_check=round(lead, 1),
        jobs=len(children),
        requeues=n_requeues,
        items=len(records),
        calls=sum(record.calls for record in records),
        seconds=round(seconds, 1),
    )
