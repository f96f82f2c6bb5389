"""Invalid values fail before any item starts, as one line naming the key and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose

from giant.cli.checks import check_group_choices
from giant.config import CONF_DIR, RunSettings, absolute_sqlite_uri
from giant.errors import ConfigError


def _error(overrides: list[str]) -> str:
    cfg = compose("config", overrides=overrides)
    with pytest.raises(ConfigError) as info:
        RunSettings.from_config(cfg)
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["agent.max_steps=-1"], "agent.max_steps=-1"),
        (["agent.max_steps=0"], "agent.max_steps=0"),
        (["agent.crop_size=10"], "agent.crop_size=10"),
        (["agent.crop_size=9000"], "agent.crop_size=9000"),
        (["runs_per_item=0"], "runs_per_item=0"),
        (["concurrency=0"], "concurrency=0"),
        (["budget_usd=-5"], "budget_usd=-5"),
        (["limit=0"], "limit=0"),
        (["provider=scripted"], "provider.script=FILE"),
        (["provider=scripted", "provider.script=/nonexistent/s.jsonl"], "file not found"),
        (["provider=openai_compatible", "provider.model=m"], "provider.base_url"),
        (["provider=openai_compatible", "provider.base_url=http://x/v1"], "provider.model is required"),
        (["provider=anthropic", "provider.temperature=0.2"], "provider.temperature"),
        (["provider=anthropic", "provider.thinking_budget=40000"], "provider.thinking_budget=40000"),
        (["agent=random_regions", "agent.region_max_side=10"], "agent.region_max_side=10"),
        (
            ["dataset=tcga_slidebench", "dataset.drop_defective=true", "dataset.slidebench_fix=/x.csv"],
            "not both",
        ),
        (["+agent.typo=1"], "agent.typo"),
        (  # the slide folder "/" exists: the missing CSV is the one problem
            ["dataset=tcga", "dataset.csv_path=/nonexistent/m.csv", "paths.wsi_root=/"],
            "dataset.csv_path=/nonexistent/m.csv",
        ),
        (  # the setting the user set is the one named
            ["dataset=gtex", "paths.wsi_root=/nonexistent/wsi"],
            "paths.wsi_root=/nonexistent/wsi: folder not found",
        ),
        (
            ["dataset=gtex", "dataset.wsi_root=/nonexistent/wsi"],
            "dataset.wsi_root=/nonexistent/wsi: folder not found",
        ),
    ],
)
def test_bad_values_are_one_line(hydra_init: None, overrides: list[str], expected: str) -> None:
    assert expected in _error(overrides)


def test_valid_overrides_pass(hydra_init: None) -> None:
    settings = RunSettings.from_config(compose("config", overrides=["agent.max_steps=5", "limit=3"]))
    assert (settings.agent.max_steps, settings.run.limit) == (5, 3)


def test_config_hash_ignores_paths_and_pacing_but_not_results(hydra_init: None) -> None:
    def hash_of(overrides: list[str]) -> str:
        return RunSettings.from_config(compose("config", overrides=overrides)).config_hash()

    base = hash_of([])
    assert hash_of(["concurrency=2", "paths.wsi_root=/elsewhere", "tracking.uri=sqlite:////tmp/x.db"]) == base
    assert hash_of(["agent.max_steps=5"]) != base
    assert hash_of(["seed=1"]) != base
    # Which items, how many runs and how they are scored change no episode: the job continues (issue 12).
    same = ["runs_per_item=3", "limit=2", "item_ids=[demo/1]", "panda_null_as_zero=false"]
    assert hash_of([*same, "bootstrap_replicates=200", "ledger=false", "record_requests=true"]) == base


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["provider=opneai"], "unknown provider 'opneai'"),
        (["-m", "agent=giant,thumbnial"], "unknown agent 'thumbnial'"),
        (["experiment=table2"], "unknown experiment 'table2'"),
        (["launcher=slurm"], "unknown launcher 'slurm'"),
    ],
)
def test_unknown_group_option(argv: list[str], expected: str) -> None:
    with pytest.raises(ConfigError, match=expected) as info:
        check_group_choices(argv)
    assert "choose one of" in str(info.value)


def test_known_group_options_and_plain_keys_pass() -> None:
    check_group_choices(["-m", "agent=giant,thumbnail", "provider=random", "agent.max_steps=1,5", "limit=2"])


def test_relative_sqlite_uri_is_anchored_at_the_project_root() -> None:
    assert absolute_sqlite_uri("sqlite:///mlruns/mlflow.db").startswith(f"sqlite:///{CONF_DIR.parent}/")
    assert absolute_sqlite_uri("sqlite:////tmp/a.db") == "sqlite:////tmp/a.db"
    assert absolute_sqlite_uri("http://host:5000") == "http://host:5000"
    assert Path(absolute_sqlite_uri("sqlite:///a.db").removeprefix("sqlite:///")).is_absolute()


def test_a_task_file_that_is_a_directory_or_fifo_is_named_as_one(hydra_init: None, tmp_path: Path) -> None:
    """Not "file not found": the path is there, but it is not a file."""
    import os

    (tmp_path / "cohort.csv").mkdir()
    os.mkfifo(tmp_path / "fifo.csv")
    base = ["dataset=custom"]
    assert _error([*base, f"dataset.path={tmp_path / 'cohort.csv'}"]).endswith(
        "cohort.csv: a directory, not a file; pass your task file (CSV or JSONL)"
    )
    assert "fifo.csv: a FIFO (named pipe), not a file" in _error(
        [*base, f"dataset.path={tmp_path / 'fifo.csv'}"]
    )
    assert "missing.csv: no such file" in _error([*base, f"dataset.path={tmp_path / 'missing.csv'}"])


def test_a_dry_run_of_a_self_hosted_model_needs_no_server_address(hydra_init: None) -> None:
    """The dry run contacts nothing (issue 42): provider=openai_compatible without provider.base_url
    is priced; the run itself still refuses it in one line."""
    dry = compose("config", overrides=["provider=openai_compatible", "provider.model=m", "dry_run=true"])
    assert RunSettings.from_config(dry).provider.base_url is None  # type: ignore[union-attr]
    assert "provider.base_url is required" in _error(["provider=openai_compatible", "provider.model=m"])


def test_missing_files_and_folders_are_reported_together(hydra_init: None, tmp_path: Path) -> None:
    """A missing question file does not hide a missing slide folder: one line each, in one pass."""
    cfg = compose(
        "config",
        overrides=[
            "dataset=tcga",
            f"dataset.csv_path={tmp_path / 'no.csv'}",
            f"paths.wsi_root={tmp_path / 'no'}",
        ],
    )
    with pytest.raises(ConfigError) as info:
        RunSettings.from_config(cfg)
    assert str(info.value).splitlines() == [
        f"dataset.csv_path={tmp_path / 'no.csv'}: file not found; pass an existing CSV file",
        f"paths.wsi_root={tmp_path / 'no'}: folder not found; set paths.wsi_root=... or GIANT_WSI_ROOT "
        "(dry_run=true lists what is missing)",
    ]
