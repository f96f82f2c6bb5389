"""A sweep's jobs, read before any job starts (giant.cli.sweep.sweep_jobs), are the jobs Hydra's basic
sweeper launches, in its order: our expansion beside the sweeper's own `split_arguments` (a test may
reach into hydra._internal; giant/ and scripts/ do not, tests/test_hydra_internal.py)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig, open_dict

from giant.cli.sweep import expand, plugin_name, sweep_jobs
from giant.confdir import group_options

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "run_eval.py"
SWEEPS = [
    [],  # no override: one job
    ["limit=2"],
    ["agent.max_steps=5,10,20"],
    ["dataset=tcga,panda", "agent.max_steps=5,10,20"],  # the guide's sweep: 6 jobs, datasets outermost
    ["agent.max_steps=range(1,4)", "seed=choice(7,3)", "limit=1"],
    ["seed=range(0,10,4)", "agent=giant,paper", "agent.max_steps=2", "seed=5,6"],  # a key given again
    ["+extra=a,b", "~tracking", "provider.model='gpt 5',x", "run.item_ids=[1,2]", "provider@p=random"],
    ["agent.max_steps=shuffle(1,2,3)"],
    ["dataset=glob(tcga*)", "limit=1,2"],  # a glob over a group's options, read by the app's loader
]


def _basic_sweeper(arguments: list[str]) -> list[list[str]]:
    parser = OverridesParser.create(config_loader=GlobalHydra.instance().config_loader())
    return [
        job
        for batch in BasicSweeper.split_arguments(parser.parse_overrides(arguments), None)
        for job in batch
    ]


@pytest.mark.parametrize("arguments", SWEEPS, ids=lambda a: " ".join(a) or "none")
def test_our_expansion_is_the_basic_sweepers(hydra_init: None, arguments: list[str]) -> None:
    parser = OverridesParser.create(config_loader=GlobalHydra.instance().config_loader())
    random.seed(1)  # shuffle(...) draws its order from `random`
    ours = expand(parser.parse_overrides(arguments))
    random.seed(1)
    assert ours == _basic_sweeper(arguments)
    assert ours and all(len(job) == len({o.partition("=")[0] for o in job}) for job in ours)


def test_a_glob_sweeps_the_groups_options(hydra_init: None) -> None:
    parser = OverridesParser.create(config_loader=GlobalHydra.instance().config_loader())
    jobs = expand(parser.parse_overrides(["dataset=glob(tcga*)"]))
    tcga = [name for name in group_options("dataset") if name.startswith("tcga")]
    assert len(tcga) > 1 and jobs == [[f"dataset={name}"] for name in tcga]


def test_an_interval_sweep_is_the_basic_sweepers_error() -> None:
    overrides = OverridesParser.create().parse_overrides(["seed=interval(0,1)"])
    with pytest.raises(HydraException) as ours:
        expand(overrides)
    with pytest.raises(HydraException) as theirs:
        BasicSweeper.split_arguments(overrides, None)
    assert str(ours.value) == str(theirs.value)


def _sweep_config(experiment: str, task: list[str]) -> DictConfig:
    cfg = compose("config", overrides=[f"experiment={experiment}"], return_hydra_config=True)
    with open_dict(cfg):  # the command line a sweep's callback sees (compose refuses sweeps in run mode)
        cfg.hydra.overrides.task = [f"experiment={experiment}", *task]
    return cfg


def test_a_composed_sweep_lists_the_jobs_hydra_launches(hydra_init: None) -> None:
    """The experiment's `hydra.sweeper.params` first, then the command line, as the sweeper reads them."""
    cfg = _sweep_config("patch_design", ["limit=1,2", "agent.patch_count=5"])
    params = [f"{key}={value}" for key, value in cfg.hydra.sweeper.params.items()]
    jobs = sweep_jobs(cfg)
    assert jobs == _basic_sweeper([*params, *cfg.hydra.overrides.task])
    assert len(jobs) == 2**3 * 2  # patch_count: the command line's one value replaces the params' two
    assert all("agent.patch_count=5" in job for job in jobs)


def test_another_sweeper_has_no_job_list(hydra_init: None) -> None:
    cfg = _sweep_config("patch_design", [])
    assert plugin_name(cfg.hydra.sweeper) == "BasicSweeper"
    with open_dict(cfg):
        cfg.hydra.sweeper._target_ = "hydra_plugins.hydra_optuna_sweeper.optuna_sweeper.OptunaSweeper"
    assert plugin_name(cfg.hydra.sweeper) == "OptunaSweeper"
    assert sweep_jobs(cfg) == []


@pytest.mark.subprocess_job
def test_a_glob_sweep_is_checked_as_a_whole_before_it_starts(tmp_path: Path) -> None:
    """Through the CLI: the sweep's callbacks list a glob sweep's jobs too (they once failed on it, and
    Hydra only warns when a callback raises, so the sweep went on unchecked and without its parent run)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "GIANT_", "HYDRA_"))}
    env.update(GIANT_CACHE_DIR=str(tmp_path / "cache"))
    missing = tmp_path / "no_slides"
    arguments = ["-m", "agent=glob(pap*)", "agent.max_steps=1,2", "dataset=tcga", f"paths.wsi_root={missing}"]
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *arguments, f"hydra.sweep.dir={tmp_path / 'sweep'}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"run_eval: paths.wsi_root={missing}: folder not found")
    assert line.endswith("(every one of the 2 sweep jobs)")  # agent=paper at T=1 and T=2
    assert not (tmp_path / "sweep").exists()
