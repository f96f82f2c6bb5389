"""`server=vllm` under `launcher=submitit_slurm` (issue 20): one `-m` sweep evaluates two open models
(as many as the test node's two CPUs run at once), each SLURM job serving its own model inside its own
allocation and stopping it when it ends, so no server is left running. The server is the fake `vllm`
of tests/llm/fake_vllm.py, on the jobs' PATH (sbatch hands the environment on); it notes each start
(argv, SLURM job), each chat request and its stop in one file, and names its model in every step it
answers."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from giant.record import read_results
from tests.llm.fake_vllm import WORKER, events, install
from tests.slurm.conftest import Report, SlurmStack
from tests.slurm.test_slurm_sweep import sweep_runs

pytestmark = pytest.mark.slow

MODELS = ("Qwen/Qwen2.5-VL-7B-Instruct", "OpenGVLab/InternVL3-8B")
ITEMS = 2


def hydra_job_id(job_dir: Path) -> str:
    """`<array job>_<task>`: the SLURM array task the job ran as (submitit's folder name for it)."""
    hydra = yaml.safe_load((job_dir / ".hydra" / "hydra.yaml").read_text())
    return str(hydra["hydra"]["job"]["id"])


def running(pid: int) -> bool:
    """A live fake server or worker with this pid (a zombie or a reused pid is not one)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state != "Z" and ("fake_vllm" in cmdline or WORKER in cmdline)


@pytest.mark.subprocess_job
def test_a_sweep_over_two_open_models_serves_each_in_its_own_job(slurm: SlurmStack, report: Report) -> None:
    here = slurm.tmp / "serve_fake"  # beside the sweep folder, not in it
    install(here / "bin")
    record = here / "fake_vllm.jsonl"
    marker = here / "weights"  # a flag only this test's servers carry: pgrep finds what is left of them
    started = time.monotonic()
    sweep_dir = slurm.sweep(
        "serve",
        "server=vllm",
        "provider=openai_compatible",
        f"provider.model={','.join(MODELS)}",
        "dataset=demo",
        f"limit={ITEMS}",
        "agent.max_steps=2",
        "server.startup_timeout_s=120",
        f"server.args=['--download-dir={marker}']",
        "hydra.launcher.timeout_min=10",
        env={
            "PATH": f"{here / 'bin'}:{slurm.env['PATH']}",
            "FAKE_VLLM_RECORD": str(record),
            "FAKE_VLLM_WORKER": "1",  # a forked engine process: only a stop of the whole group ends it
        },
    )
    seconds = time.monotonic() - started
    noted = events(record)
    starts = {event["model"]: event for event in noted if event["event"] == "start"}
    assert sorted(starts) == sorted(MODELS) and len(starts) == sum(e["event"] == "start" for e in noted), (
        noted
    )

    # every job completed, as its own SLURM array task
    outcomes = [json.loads(path.read_text()) for path in sorted((sweep_dir / "outcomes").glob("*.json"))]
    assert [outcome["code"] for outcome in outcomes] == [0] * len(MODELS), outcomes
    submitted = {path.name for path in (sweep_dir / ".submitit").iterdir() if path.name != "%j"}
    job_ids = set()
    for outcome in outcomes:
        job_dir = Path(outcome["output_dir"])
        [model] = [o.split("=", 1)[1] for o in outcome["overrides"] if o.startswith("provider.model=")]
        job_id = hydra_job_id(job_dir)
        assert job_id in submitted
        job_ids.add(job_id)

        # its server: started by the job, inside the job's allocation, with its own model and port
        start = starts[model]
        slurm_vars = start["slurm"]
        assert f"{slurm_vars['SLURM_ARRAY_JOB_ID']}_{slurm_vars['SLURM_ARRAY_TASK_ID']}" == job_id, start
        assert slurm_vars["SLURM_JOB_ID"] and slurm_vars["SLURM_STEP_ID"] is not None, start
        assert slurm_vars["SLURMD_NODENAME"] == slurm.cluster.node
        port = start["port"]
        assert start["argv"] == [
            "serve",
            model,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            f"--download-dir={marker}",
        ]
        assert start["pgid"] == start["pid"]  # its own process group, its worker in it
        resolved = json.loads((job_dir / "resolved_config.json").read_text())
        assert resolved["provider"]["base_url"] == f"http://127.0.0.1:{port}/v1"
        assert f"fake vllm: {model} on 127.0.0.1:{port}" in (job_dir / "server.log").read_text()

        # its results: from its own server and model
        records = read_results(job_dir / "results.jsonl")
        assert len(records) == ITEMS and all(r.status == "answered" for r in records), records
        chats = [e for e in noted if e["event"] == "chat" and e["pid"] == start["pid"]]
        assert {(e["served"], e["asked"], e["status"]) for e in chats} == {(model, model, 200)}
        assert len(chats) >= sum(r.calls for r in records) > 0
        for result in records:
            assert result.trajectory is not None
            trajectory = (job_dir / result.trajectory / "trajectory.json").read_text()
            assert f"{model} sees tumour" in trajectory
            assert not any(f"{other} sees tumour" in trajectory for other in MODELS if other != model)

        # stopped by the job itself (its parent still there), not by SLURM tearing the step down
        stops = [e for e in noted if e["event"] == "stop" and e["pid"] == start["pid"]]
        assert [(e["signal"], e["parent_alive"]) for e in stops] == [("SIGTERM", True)], stops
    assert len(job_ids) == len(MODELS)

    # nothing left running: not the servers, not their workers
    pids = [pid for start in starts.values() for pid in (start["pid"], start["worker"])]
    assert not [pid for pid in pids if running(pid)]
    left = subprocess.run(["pgrep", "-f", "--", f"--download-dir={marker}"], capture_output=True, text=True)
    assert left.returncode == 1 and not left.stdout, left.stdout

    parent, children = sweep_runs(slurm, sweep_dir)
    assert parent.info.status == "FINISHED" and parent.data.tags["status"] == "complete"
    assert parent.data.metrics["n_jobs"] == len(MODELS) and parent.data.metrics["n_failed"] == 0
    assert sorted(child.data.tags["status"] for child in children) == ["complete"] * len(MODELS)
    report(
        "serve (server=vllm, 2 models, 2 items each)",
        jobs=len(job_ids),
        servers=len(starts),
        chats=sum(e["event"] == "chat" for e in noted),
        seconds=round(seconds, 1),
    )
