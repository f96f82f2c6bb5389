"""Agent settings per mode: each conf/agent/<mode>.yaml (the one place of every agent value) composes
into its mode's settings model with the provider's S, a run carries only its mode's settings (so one
mode's setting never moves another mode's config hash), and another mode's key is one line naming
the modes that have it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from giant.agent.modes import MODES, parse_agent
from giant.cli.checks import check_override_keys
from giant.config import CONF_DIR, RunSettings, resolve
from giant.errors import ConfigError
from giant.tracking.params import to_params


def _compose(overrides: list[str], conf_dir: Path = CONF_DIR) -> DictConfig:
    with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3"):
        return compose("config", overrides=[*overrides, "dry_run=true"])


@pytest.mark.parametrize("mode", ["giant", "paper", "authors"])
def test_the_correction_limit_is_recorded_with_the_run(mode: str) -> None:
    cfg = _compose([f"agent={mode}"])
    changed = _compose([f"agent={mode}", "agent.max_corrections=5"])
    settings = RunSettings.from_config(cfg)
    assert settings.agent.model_dump()["max_corrections"] == 3
    params = to_params(resolve(cfg), secrets=[], max_length=250)
    assert params["agent.max_corrections"] == "3"
    assert RunSettings.from_config(changed).agent.model_dump()["max_corrections"] == 5
    assert settings.config_hash() != RunSettings.from_config(changed).config_hash()


@pytest.mark.parametrize("mode", sorted(MODES))
def test_agent_models_hold_no_defaults(mode: str) -> None:
    """A value in the model as well as in conf/ is written twice (and they drift): conf/ has it."""
    model = MODES[mode].settings
    assert [name for name, field in model.model_fields.items() if not field.is_required()] == []


@pytest.mark.parametrize("provider", ["random", "openai", "anthropic"])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_each_mode_conf_composes_into_its_model(mode: str, provider: str) -> None:
    """What the CLI composes and what parse_agent builds outside Hydra are the same settings, with the
    provider's S (1000 for OpenAI, 500 for Claude)."""
    cfg = _compose([f"agent={mode}", f"provider={provider}"])
    assert set(cfg.agent.keys()) == set(MODES[mode].settings.model_fields)
    agent = RunSettings.from_config(cfg).agent
    assert agent == parse_agent({"mode": mode}, provider)
    assert agent.crop_size == cfg.provider.crop_size


def test_parse_agent_fills_what_it_is_not_given_from_conf() -> None:
    assert parse_agent({"mode": "giant"}).crop_size == 1000  # conf/config.yaml's provider: random
    assert parse_agent({"mode": "giant"}, "anthropic").crop_size == 500
    assert parse_agent({"mode": "authors", "max_steps": 5}, "anthropic").model_dump() == {
        **parse_agent({"mode": "authors"}, "anthropic").model_dump(),
        "max_steps": 5,
    }


def test_a_giant_run_carries_no_other_modes_settings() -> None:
    agent = RunSettings.from_config(_compose(["agent=giant"])).agent.model_dump()
    others = {
        "thumbnail_size",
        "patch_count",
        "patch_size",
        "region_min_side",
        "region_max_side",
        "max_restarts",
    }
    assert not others & set(agent)


def test_a_patch_setting_leaves_the_giant_hash_alone(tmp_path: Path) -> None:
    """Changing patch_count wherever conf/ sets it changes patch runs' hash, never a giant run's."""
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf)
    for path in (conf / "agent").rglob("*.yaml"):
        path.write_text(path.read_text().replace("patch_count: 30", "patch_count: 31"))

    def hash_of(mode: str, conf_dir: Path) -> str:
        return RunSettings.from_config(_compose([f"agent={mode}"], conf_dir)).config_hash()

    assert hash_of("patch", conf) != hash_of("patch", CONF_DIR)
    assert hash_of("giant", conf) == hash_of("giant", CONF_DIR)


def test_another_modes_key_on_the_command_line_is_one_line() -> None:
    with pytest.raises(ConfigError) as info:
        check_override_keys(["agent=giant", "agent.patch_count=10"])
    assert str(info.value) == (
        "agent.patch_count is a setting of agent=patch only, not of agent=giant: "
        "pick one of those agent options or drop the key"
    )
    with pytest.raises(
        ConfigError, match=r"agent\.region_min_tissue is a setting of agent=patch,random_regions"
    ):
        check_override_keys(["-m", "agent=giant,patch", "agent.region_min_tissue=0.5"])
    check_override_keys(["agent=patch", "agent.patch_count=10"])  # its own mode: fine


def test_another_modes_key_in_the_settings_is_one_line() -> None:
    """`+agent.thumbnail_size=500` reaches validation: the message names the modes that have it."""
    with pytest.raises(ConfigError) as info:
        RunSettings.from_config(_compose(["agent=paper", "+agent.thumbnail_size=500"]))
    assert "\n" not in str(info.value)
    assert "agent.thumbnail_size is a setting of agent=thumbnail only, not of agent=paper" in str(info.value)
    with pytest.raises(ValueError, match=r"agent\.max_restarts is a setting of agent=authors only"):
        parse_agent({"mode": "giant", "max_restarts": 2})
