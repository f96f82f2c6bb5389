"""Every conf/ option composes and validates (Hydra's compose API in-process: fast)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig

from giant.confdir import group_options
from giant.config import CONF_DIR, GROUPS, PROJECT_ROOT, RunSettings
from giant.errors import ConfigError

# Options that need a value only the user can give.
REQUIRED = {
    "openai_compatible": ["provider.model=qwen2.5-vl", "provider.base_url=http://127.0.0.1:8000/v1"],
    "scripted": [f"provider.script={PROJECT_ROOT / 'conf' / 'config.yaml'}"],  # any existing file
    "vllm": ["provider=openai_compatible", "provider.model=Qwen/Qwen2.5-VL-7B-Instruct"],
    "custom": [f"dataset.path={PROJECT_ROOT / 'conf' / 'config.yaml'}"],  # any existing file
    "transformers": ["provider=openai_compatible", "provider.model=/models/tiny-llava"],
}


def _compose(overrides: list[str], *, hydra: bool = False) -> DictConfig:
    return compose("config", overrides=[*overrides, "dry_run=true"], return_hydra_config=hydra)


def _cases() -> list[tuple[str, str]]:
    return [(group, option) for group in GROUPS for option in group_options(group)]


def test_every_group_has_its_options() -> None:
    assert set(group_options("provider")) == {
        "openai",
        "anthropic",
        "openai_compatible",
        "random",
        "scripted",
        "gemini",
    }
    assert set(group_options("dataset")) == {
        "tcga",
        "gtex",
        "panda",
        "tcga_slidebench",
        "tcga_expert_vqa",
        "demo",
        "custom",
    }
    assert set(group_options("agent")) == {
        "giant",
        "paper",
        "authors",
        "thumbnail",
        "patch",
        "random_regions",
    }
    assert set(group_options("experiment")) == {
        "table1",
        "scaling",
        "thumbnail_resolution",
        "random_regions",
        "patch_design",
        "tools",
    }
    assert set(group_options("launcher")) == {"basic", "joblib", "submitit_local", "submitit_slurm"}


def test_every_conf_folder_is_a_composed_group() -> None:
    """The parametrized compose test below covers GROUPS x the yaml files found in each folder: a new
    conf/<group>/ folder must join GROUPS, or its options would escape it."""
    folders = {p.name for p in CONF_DIR.iterdir() if p.is_dir() and any(p.rglob("*.yaml"))}
    assert folders == set(GROUPS)
    for group in GROUPS:
        assert group_options(group), f"conf/{group}/ has no options"
        assert not any((CONF_DIR / group).glob("*/*.yaml")), f"conf/{group}/ has nested options"


@pytest.mark.parametrize(("group", "option"), _cases())
def test_option_composes_and_validates(hydra_init: None, group: str, option: str) -> None:
    cfg = _compose(
        [f"{group}={option}", *REQUIRED.get(option, [])], hydra=group in ("launcher", "experiment")
    )
    settings = RunSettings.from_config(cfg)
    assert settings.run.dry_run is True
    if group == "agent":
        expected = {"giant": "giant", "paper": "paper", "authors": "authors"}.get(option, option)
        assert settings.agent.mode == expected
    if group == "provider":
        assert settings.provider.name == option
    if group == "dataset":
        assert settings.dataset.name == option
    if group == "experiment":
        assert cfg.hydra.sweeper.params, f"experiment {option} defines no sweep"
    if group == "launcher" and option != "basic":
        assert option.split("_")[0] in cfg.hydra.launcher._target_.lower()


@pytest.mark.parametrize("experiment", group_options("experiment"))
def test_each_experiment_sweep_point_validates(hydra_init: None, experiment: str) -> None:
    """Every value an experiment sweeps over composes into valid settings (first and last of each)."""
    cfg = _compose([f"experiment={experiment}"], hydra=True)
    parser = OverridesParser.create()  # Hydra's own reading: a value may itself be a list ("[],[conch]")
    for key, value in cfg.hydra.sweeper.params.items():
        (override,) = parser.parse_overrides([f"{key}={value}"])
        values = list(override.sweep_string_iterator())
        for value in (values[0], values[-1]):
            point = _compose([f"experiment={experiment}", f"{key}={value}"])
            RunSettings.from_config(point)


def test_crop_size_follows_the_provider(hydra_init: None) -> None:
    assert RunSettings.from_config(_compose(["provider=anthropic"])).agent.crop_size == 500
    assert RunSettings.from_config(_compose(["provider=openai"])).agent.crop_size == 1000
    both = RunSettings.from_config(_compose(["provider=anthropic", "agent.crop_size=700"]))
    assert both.agent.crop_size == 700


def test_paths_and_store_are_absolute_from_the_project_root(
    hydra_init: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("GIANT_CACHE_DIR", raising=False)
    settings = RunSettings.from_config(_compose([]))
    assert settings.tracking.uri == f"sqlite:///{PROJECT_ROOT / 'mlruns' / 'mlflow.db'}"
    assert settings.paths.cache_dir == PROJECT_ROOT / ".cache" / "giant"
    assert Path(settings.provider.pricing_file).is_absolute()


def test_environment_overrides_paths_and_store(
    hydra_init: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")
    monkeypatch.setenv("GIANT_WSI_ROOT", str(tmp_path))
    settings = RunSettings.from_config(_compose(["dataset=tcga"]))
    assert settings.tracking.uri == "http://127.0.0.1:5000"
    assert settings.dataset.wsi_root == tmp_path


def test_stable_names_exist(hydra_init: None) -> None:
    """Names other tools and the docs rely on."""
    cfg = _compose([], hydra=True)
    for key in (
        "dataset.csv_path",
        "paths.wsi_root",
        "provider.model",
        "agent.max_steps",
        "agent.crop_size",
        "runs_per_item",
        "limit",
        "dry_run",
        "tracking.uri",
        "budget_usd",
        "concurrency",
    ):
        node: object = cfg
        for part in key.split("."):
            assert part in node, key  # type: ignore[operator]
            node = node[part]  # type: ignore[index]
    assert cfg.hydra.job.chdir is False
    assert "mlflow_sweep" in cfg.hydra.callbacks


def test_a_server_for_another_provider_is_one_line(hydra_init: None) -> None:
    """server=vllm with the default provider used to fail on provider.base_url, far from the cause."""
    with pytest.raises(
        ConfigError,
        match=r"^server= starts a model server for provider=openai_compatible, not provider=random",
    ):
        RunSettings.from_config(_compose(["server=vllm"]))
