"""`server=transformers` under `launcher=submitit_slurm` (issue 36): one `-m` sweep over two tiny LLaVAs
built at test time (tests/realserver/tiny_vlm.py), each SLURM job starting the real `transformers
serve <its model>` inside its own allocation, running the demo against it with the preflight on, and
stopping it when the job ends; no server is left running afterwards.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from giant.eval.causes import record_cause
from giant.record import read_results
from tests.realserver.served import offline_env, transformers_cli
from tests.realserver.tiny_vlm import build_tiny_vlm
from tests.slurm.conftest import Report, SlurmStack
from tests.slurm.test_slurm_sweep import sweep_runs

pytestmark = pytest.mark.slow

ITEMS = 2


@pytest.mark.subprocess_job
def test_a_sweep_over_two_tiny_models_serves_each_with_transformers_serve(
    slurm: SlurmStack, report: Report
) -> None:
    cli = transformers_cli()
    here = slurm.tmp / "serve_transformers"  # beside the sweep folder, not in it
    models = [build_tiny_vlm(here / f"tiny-llava-{seed}", seed=seed) for seed in (0, 1)]
    started = time.monotonic()
    sweep_dir = slurm.sweep(
        "serve_transformers",
        "server=transformers",
        f"server.command=[{cli},serve]",
        "server.startup_timeout_s=300",
        "provider=openai_compatible",
        f"provider.model={','.join(str(model) for model in models)}",
        "provider.max_tokens=8",  # a random model's reply is cut there: a model failure, quickly
        "dataset=demo",
        f"limit={ITEMS}",
        "agent.max_steps=2",
        "hydra.launcher.timeout_min=10",
        env=offline_env(here),
    )
    seconds = time.monotonic() - started

    outcomes = [json.loads(path.read_text()) for path in sorted((sweep_dir / "outcomes").glob("*.json"))]
    assert [outcome["code"] for outcome in outcomes] == [0] * len(models), outcomes
    served = {}
    for outcome in outcomes:
        job_dir = Path(outcome["output_dir"])
        [model] = [o.split("=", 1)[1] for o in outcome["overrides"] if o.startswith("provider.model=")]
        log = (job_dir / "server.log").read_text(errors="replace")
        [port] = re.findall(r"Uvicorn running on http://127\.0\.0\.1:(\d+)", log)
        resolved = json.loads((job_dir / "resolved_config.json").read_text())
        assert resolved["provider"]["base_url"] == f"http://127.0.0.1:{port}/v1"
        assert resolved["provider"]["model"] == model
        # the job's own server, pinned to its model: it answered the preflight and every call
        records = read_results(job_dir / "results.jsonl")
        assert len(records) == ITEMS, records
        assert all(record_cause(r) is None and r.status != "runner_error" for r in records), records
        posts = log.count('"POST /v1/chat/completions HTTP/1.1" 200')
        assert posts >= 1 + min(1, sum(r.calls for r in records)), log[-2000:]
        served[model] = int(port)
    assert sorted(served) == sorted(str(model) for model in models)
    assert len(set(served.values())) == len(models)

    # nothing left running: no process serves either model any more
    for model in models:
        left = subprocess.run(["pgrep", "-f", "--", f"serve {model}"], capture_output=True, text=True)
        assert left.returncode == 1 and not left.stdout, left.stdout

    parent, children = sweep_runs(slurm, sweep_dir)
    assert parent.info.status == "FINISHED" and parent.data.tags["status"] == "complete"
    assert sorted(child.data.tags["status"] for child in children) == ["complete"] * len(models)
    report(
        "serve (server=transformers, 2 tiny models, 2 items each)",
        jobs=len(outcomes),
        seconds=round(seconds, 1),
    )
