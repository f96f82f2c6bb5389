"""Each config value is written once: defaults in conf/ (the settings models hold types and checks
only), the dataset files share conf/dataset_common.yaml, and the Hub location is the one the loader
downloads from."""

from __future__ import annotations

from pathlib import Path

import huggingface_hub.constants
import pytest
import yaml
from hydra import compose
from pydantic import BaseModel

from giant.confdir import group_options
from giant.config import (
    CONF_DIR,
    DatasetSettings,
    PathSettings,
    RunOptions,
    RunSettings,
    TrackingSettings,
    shipped,
)
from giant.errors import ConfigError
from giant.job import load_data


@pytest.mark.parametrize("model", [PathSettings, DatasetSettings, RunOptions, TrackingSettings, RunSettings])
def test_settings_models_hold_no_defaults(model: type[BaseModel]) -> None:
    """A default in the model as well as in conf/ is a value written twice (and they drift)."""
    defaulted = [name for name, field in model.model_fields.items() if not field.is_required()]
    assert defaulted == []


@pytest.mark.parametrize("model", [RunOptions, TrackingSettings])
def test_shipped_files_hold_every_value(model: type[BaseModel]) -> None:
    assert shipped(model).model_dump().keys() == model.model_fields.keys()
    assert shipped(RunOptions, seed=7).seed == 7


def test_dataset_files_share_one_base() -> None:
    """Only a dataset's own values are in its file; the rest (Hub location, CSV, slides, defect
    policy) come from conf/dataset_common.yaml."""
    common = yaml.safe_load((CONF_DIR / "dataset_common.yaml").read_text())
    for option in group_options("dataset"):
        own = yaml.safe_load((CONF_DIR / "dataset" / f"{option}.yaml").read_text())
        assert own["defaults"] == ["/dataset_common@_here_", "_self_"], option
        repeated = {key for key, value in own.items() if common.get(key) == value}
        assert repeated == set(), option
        assert "hf_repo" not in own and "hf_file" not in own, option


def test_hub_location_is_the_one_downloaded(
    hydra_init: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.delenv("GIANT_MULTIPATHQA_CSV", raising=False)
    cfg = compose(
        "config",
        overrides=[
            "dataset=gtex",
            "dataset.hf_repo=example-lab/OtherQA",
            "dataset.hf_file=other.csv",
            f"paths.cache_dir={tmp_path}",
            "dry_run=true",
        ],
    )
    with pytest.raises(ConfigError) as info:
        load_data(RunSettings.from_config(cfg))
    assert "could not download other.csv from the Hugging Face dataset example-lab/OtherQA" in str(info.value)
    assert "\n" not in str(info.value)
