"""Agent settings reach the run's record (issue 9 case 3): the correction limit is a key of
conf/agent/giant.yaml, so it is a CLI override, an MLflow param and part of the config hash."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf

from giant.agent.config import AgentConfig
from giant.config import CONF_DIR, RunSettings, resolve
from giant.tracking.params import to_params


@pytest.mark.parametrize("mode", ["giant", "paper", "authors"])
def test_the_correction_limit_is_recorded_with_the_run(mode: str) -> None:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[f"agent={mode}", "dry_run=true"])
        changed = compose("config", overrides=[f"agent={mode}", "agent.max_corrections=5", "dry_run=true"])
    settings = RunSettings.from_config(cfg)
    assert settings.agent.max_corrections == 3
    params = to_params(resolve(cfg), secrets=[], max_length=250)
    assert params["agent.max_corrections"] == "3"
    assert RunSettings.from_config(changed).agent.max_corrections == 5
    assert settings.config_hash() != RunSettings.from_config(changed).config_hash()
    # the yaml mirrors the model, every setting with the model's default, so the two cannot drift
    conf = OmegaConf.load(CONF_DIR / "agent" / "giant.yaml")
    assert isinstance(conf, DictConfig)
    assert set(conf.keys()) == set(AgentConfig.model_fields)
    defaults = AgentConfig()
    for key in AgentConfig.model_fields:
        if not OmegaConf.is_interpolation(conf, key):  # crop_size follows the provider
            assert conf[key] == getattr(defaults, key), key
