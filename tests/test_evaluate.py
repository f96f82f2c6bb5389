"""`giant.evaluate`: a job of scripts/run_eval.py as a function call in the test's own process. The same
overrides give the same summary, MLflow params and tags as the command line; a bad override is the
ConfigError the command line turns into exit code 2; the job folder has what Hydra writes for a run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

import giant
from giant.errors import ConfigError
from giant.record import read_summary
from giant.record.names import MAIN_METRIC
from giant.record.summary import Summary, Totals
from giant.tracking.names import OUTPUT_DIR_TAG, OVERRIDES_TAG

ROOT = Path(__file__).resolve().parents[1]
# The summary fields that measure the run's time, not its result.
TIMED = {"totals": set(Totals.TIMED)}


def _overrides(tmp: Path) -> list[str]:
    """A demo job of 4 items with everything it writes under `tmp`."""
    return [
        "dataset=demo",
        "provider=random",
        "limit=4",
        "agent.max_steps=3",
        "bootstrap_replicates=50",
        "resume=false",  # each of the two runs runs its items
        f"paths.cache_dir={tmp / 'cache'}",
        f"tracking.uri=sqlite:///{tmp / 'store' / 'mlflow.db'}",
    ]


def _result(summary: Summary) -> dict[str, object]:
    data = json.loads(summary.model_dump_json(exclude=TIMED))
    data["provenance"].pop("versions", None)  # the same, but read from the same installed packages
    return data


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_evaluate_gives_what_the_command_line_gives(tmp_path: Path) -> None:
    overrides = _overrides(tmp_path)
    summary = giant.evaluate(overrides, output_dir=tmp_path / "library")
    assert summary is not None and summary.n_items == 4
    assert read_summary(tmp_path / "library") == summary  # what it returns is what it wrote

    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "GIANT_", "HYDRA_"))}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, str(ROOT / "scripts" / "run_eval.py"), *overrides]
    done = subprocess.run(
        [*command, f"hydra.run.dir={tmp_path / 'cli'}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert _result(read_summary(tmp_path / "cli")) == _result(summary)

    client = MlflowClient(f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("giant")
    assert experiment is not None
    runs = {Path(r.data.tags[OUTPUT_DIR_TAG]).name: r for r in client.search_runs([experiment.experiment_id])}
    assert set(runs) == {"library", "cli"}
    library, cli = runs["library"], runs["cli"]
    assert library.data.params == cli.data.params
    assert library.data.tags[OVERRIDES_TAG] == cli.data.tags[OVERRIDES_TAG] == " ".join(overrides)
    assert library.info.run_name == cli.info.run_name
    assert library.data.metrics[MAIN_METRIC] == cli.data.metrics[MAIN_METRIC] == summary.metric.point
    for name in (".hydra/config.yaml", ".hydra/overrides.yaml"):
        assert (tmp_path / "library" / name).read_text() == (tmp_path / "cli" / name).read_text(), name


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        (["provider=opneai"], "unknown provider 'opneai'"),
        (["agent.maxsteps=3"], "unknown key 'agent.maxsteps'"),
        (["agent.max_steps=-1"], "agent.max_steps=-1"),
        (["agent.max_steps=1,2"], "giant.evaluate runs one job"),
        (["-m", "limit=1"], "giant.evaluate runs one job"),
    ],
)
def test_a_bad_override_is_the_config_error_the_command_line_exits_2_with(
    tmp_path: Path, overrides: list[str], says: str
) -> None:
    with pytest.raises(ConfigError, match=says.replace("(", r"\(")):
        giant.evaluate([*overrides, f"paths.cache_dir={tmp_path / 'cache'}"], output_dir=tmp_path / "job")
    assert not (tmp_path / "job" / "summary.json").exists()


def test_evaluate_runs_where_an_event_loop_is_already_running(tmp_path: Path) -> None:
    """A notebook runs its own event loop on the caller's thread (so does an async harness): the job,
    whose runner needs asyncio.run(), still runs and returns its summary (before, RuntimeError)."""
    import asyncio

    overrides = [o for o in _overrides(tmp_path) if not o.startswith("tracking.")] + [
        "tracking.enabled=false",
        "limit=2",
        "agent.max_steps=1",
    ]

    async def in_a_notebook_cell() -> Summary | None:
        return giant.evaluate(overrides, output_dir=tmp_path / "job")

    summary = asyncio.run(in_a_notebook_cell())
    assert summary is not None and summary.n_items == 2 and summary.complete
    assert read_summary(tmp_path / "job").n_items == 2
