"""The provider registry and per-provider settings: names -> classes imported on demand, each
provider's own settings model, its own image-token formula asked by the dry run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose

from giant.agent.modes import parse_agent
from giant.cli.checks import check_override_keys
from giant.config import CONF_DIR, RunSettings
from giant.errors import ConfigError
from giant.eval.dryrun import estimate_cost
from giant.llm.config import provider_names, provider_settings, validate_provider
from giant.llm.factory import build_provider, provider_class
from giant.llm.image_tokens import anthropic_pixels, openai_high_detail
from giant.llm.pricing import Pricing
from tests.eval.runner_fixtures import make_items

ROOT = Path(__file__).resolve().parents[2]


def test_every_provider_yaml_validates_and_every_name_has_a_class() -> None:
    """conf/provider/*.yaml and the registry name the same providers; each YAML alone is valid."""
    assert sorted(provider_names()) == sorted(p.stem for p in (CONF_DIR / "provider").glob("*.yaml"))
    extra = {"openai_compatible": {"model": "m", "base_url": "http://x/v1"}, "scripted": {"script": __file__}}
    for name in provider_names():
        settings = provider_settings(name, **extra.get(name, {}))
        assert settings.name == name and provider_class(name).__name__.lower().startswith(name.split("_")[0])


def test_unknown_provider_is_one_line_listing_the_names() -> None:
    expected = (
        "provider=nope is unknown; use one of anthropic, gemini, openai, openai_compatible, random, scripted"
    )
    with pytest.raises(ConfigError) as info:
        provider_class("nope")
    assert str(info.value) == expected
    with pytest.raises(ConfigError) as info:
        validate_provider({"name": "nope", "model": "m"})
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_building_the_random_provider_loads_no_sdk() -> None:
    code = (
        "import sys; from giant.llm.config import provider_settings; from giant.llm.factory import "
        "build_provider; build_provider(provider_settings('random')); "
        "print(sorted(m for m in ('openai', 'anthropic') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("name", "key", "owners"),
    [
        ("openai", "thinking_budget", "only anthropic, gemini have it"),
        ("anthropic", "reasoning_effort", "only openai has it"),
        ("random", "image_detail", "only openai, openai_compatible have it"),
        ("anthropic", "seed", "only random has it"),
        ("openai", "colour", "no provider has it"),
    ],
)
def test_a_setting_of_another_provider_is_one_line_naming_its_owners(
    name: str, key: str, owners: str
) -> None:
    with pytest.raises(ConfigError) as info:
        provider_settings(name, **{key: 1})
    message = str(info.value)
    assert f"{key} is not a setting of provider={name} ({owners}); remove it" in message
    assert "\n" not in message


def test_wrong_provider_setting_through_the_cli_config_is_one_line(hydra_init: None) -> None:
    cfg = compose("config", overrides=["provider=openai", "+provider.thinking_budget=2048"])
    with pytest.raises(ConfigError) as info:
        RunSettings.from_config(cfg)
    assert str(info.value) == (
        "provider: thinking_budget is not a setting of provider=openai (only anthropic, gemini have it); "
        "remove it"
    )


def test_wrong_provider_key_on_the_command_line_names_its_owners() -> None:
    with pytest.raises(ConfigError) as info:
        check_override_keys(["provider=openai", "provider.thinking_budget=2048"])
    assert str(info.value).startswith(
        "provider.thinking_budget is a setting of provider=anthropic,gemini only, not of provider=openai"
    )


def test_union_member_errors_name_the_key_without_the_tag(hydra_init: None) -> None:
    cfg = compose("config", overrides=["provider=anthropic", "provider.thinking_budget=40000"])
    with pytest.raises(ConfigError) as info:
        RunSettings.from_config(cfg)
    assert str(info.value).startswith("provider: provider.thinking_budget=40000 must be below")


def test_one_providers_setting_is_not_in_anothers_config_hash(hydra_init: None) -> None:
    def settings(overrides: list[str]) -> RunSettings:
        return RunSettings.from_config(compose("config", overrides=overrides))

    openai = settings(["provider=openai"]).model_dump()["provider"]
    assert "thinking_budget" not in openai and "seed" not in openai and "script" not in openai
    anthropic = settings(["provider=anthropic"])
    assert "reasoning_effort" not in anthropic.model_dump()["provider"]
    assert (
        settings(["provider=anthropic", "provider.thinking_budget=2048"]).config_hash()
        != anthropic.config_hash()
    )


def test_defaults_come_from_the_yaml_once() -> None:
    """Anthropic max_tokens, the Claude crop size and the key variable: the YAML's values, unchanged
    by the model (no second default in code)."""
    claude = provider_settings("anthropic")
    assert (claude.max_tokens, claude.crop_size, claude.api_key_env) == (30000, 500, "ANTHROPIC_API_KEY")
    gpt = provider_settings("openai")
    assert (gpt.max_tokens, gpt.crop_size, gpt.api_key_env) == (None, 1000, "OPENAI_API_KEY")
    with pytest.raises(ConfigError, match=r"provider.max_tokens=None: Input should be a valid integer"):
        provider_settings("anthropic", max_tokens=None)


def test_published_image_token_formulas() -> None:
    # the providers' own worked examples
    assert openai_high_detail(1024, 1024) == 765
    assert openai_high_detail(2048, 4096) == 1105
    assert openai_high_detail(500, 400) == 85 + 170
    assert anthropic_pixels(1000, 1000) == 1334
    assert anthropic_pixels(3136, 3136) == anthropic_pixels(1568, 1568)


@pytest.mark.parametrize(
    ("name", "model", "formula", "tokens"),
    [
        ("anthropic", "my-claude-finetune", "anthropic", anthropic_pixels(500, 500)),
        ("anthropic", "opus", "anthropic", anthropic_pixels(500, 500)),
        ("openai_compatible", "claude-via-gateway", "openai_high_detail", openai_high_detail(500, 500)),
        ("openai", "gpt-5", "openai_high_detail", openai_high_detail(500, 500)),
    ],
)
def test_the_dry_run_asks_the_provider_for_image_tokens(
    name: str, model: str, formula: str, tokens: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The formula is the provider's, whatever the model string says, and needs no API key."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    extra = {"base_url": "http://x/v1"} if name == "openai_compatible" else {}
    provider = provider_settings(name, model=model, **extra)
    agent = parse_agent({"mode": "giant", "crop_size": 500, "max_steps": 3})
    estimate = estimate_cost(make_items(2, ["a.svs"]), {}, agent, provider, Pricing({}), 1)
    assert (estimate.image_formula, estimate.tokens_per_image) == (formula, tokens)
    assert provider_class(name).image_tokens(500, 500) == tokens


def test_build_provider_checks_the_key_of_network_providers_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is unset"):
        build_provider(provider_settings("openai"))
    assert build_provider(provider_settings("random")).name == "random"
