"""The dry run's expected cost per price tier, side by side (standard / flex / batch), from the shipped
price table: flex halves the standard figure, batch depends on whether the cache outlives a round."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from giant.agent.modes import parse_agent
from giant.config import CONF_DIR
from giant.core import Item
from giant.eval.dryrun import CostEstimate, DryRunReport, dry_run
from giant.llm.config import ProviderSettings, provider_settings
from giant.llm.pricing import Pricing, Rates
from tests.eval.runner_fixtures import make_items, write_slides

SHIPPED = Pricing.load(CONF_DIR / "pricing.yaml")
GPT5 = provider_settings("openai", model="gpt-5", prompt_cache_retention="in_memory")


@pytest.fixture
def dataset(tmp_path: Path) -> tuple[Path, list[Item]]:
    return write_slides(tmp_path / "wsi", ["a.svs", "b.svs"]), make_items(4, ["a.svs", "b.svs"])


def report(
    dataset: tuple[Path, list[Item]], provider: ProviderSettings, pricing: Pricing = SHIPPED
) -> DryRunReport:
    root, items = dataset
    crop = 1000 if provider.name == "openai" else 500
    agent = parse_agent({"mode": "giant", "max_steps": 10, "crop_size": crop})
    return dry_run(items, wsi_root=root, agent=agent, provider=provider, pricing=pricing, runs_per_item=2)


def test_openai_tiers_side_by_side(dataset: tuple[Path, list[Item]]) -> None:
    shown = report(dataset, GPT5)
    est: CostEstimate = shown.estimate
    assert list(est.tiers) == ["standard", "flex", "batch"]
    standard, flex, batch = (est.tiers[t] for t in ("standard", "flex", "batch"))
    assert standard is not None and flex is not None and batch is not None
    assert standard == pytest.approx(est.total.expected_usd)  # the expected figure, not the upper bound
    assert flex == pytest.approx(standard / 2)  # every flex rate is half, and flex keeps the cache
    # A batch round outlives OpenAI's in-memory cache: every call bills as a first call, at half price.
    assert flex < batch < est.total.high_usd / 2 + 1e-9  # type: ignore[operator]
    line = next(line for line in shown.render().splitlines() if line.startswith("per tier"))
    assert re.fullmatch(
        r"per tier, expected: standard \$[\d,.]+ / flex \$[\d,.]+ \(0\.50x\) / batch \$[\d,.]+ "
        r"\(0\.\d\dx\); batch: the prompt cache expires between rounds",
        line,
    ), line


def test_openai_batch_keeps_the_cache_with_24h_retention(dataset: tuple[Path, list[Item]]) -> None:
    """The default (auto) asks gpt-5's batch requests for 24-hour retention: the rule holds across
    rounds at the same cache prices, so batch is half of standard, as flex is."""
    default = report(dataset, provider_settings("openai", model="gpt-5")).estimate
    assert provider_settings("openai").prompt_cache_retention == "auto"
    standard, flex, batch = (default.tiers[t] for t in ("standard", "flex", "batch"))
    assert standard is not None and flex is not None and batch is not None
    assert batch == pytest.approx(standard / 2) and batch == pytest.approx(flex)
    lost = report(dataset, GPT5).estimate.tiers["batch"]
    assert lost is not None and batch < lost
    words = "batch: 24-hour cache retention outlives the rounds (provider.prompt_cache_retention=auto)"
    assert words in default.render_tiers()[0]
    # A model OpenAI keeps no 24-hour cache for gets nothing under auto: its cache expires.
    mini = report(dataset, provider_settings("openai", model="gpt-5-mini")).estimate
    assert "the prompt cache expires between rounds" in mini.render_tiers()[0]


def test_anthropic_batch_follows_the_cache_ttl(dataset: tuple[Path, list[Item]]) -> None:
    def tiers(ttl: str) -> CostEstimate:
        claude = provider_settings("anthropic", model="claude-sonnet-4-5", cache_ttl=ttl)
        return report(dataset, claude).estimate

    one_hour, five_minutes = tiers("1h"), tiers("5m")
    assert list(one_hour.tiers) == ["standard", "batch"]  # Anthropic sells no flex
    assert one_hour.tiers["standard"] == five_minutes.tiers["standard"]
    long, short = one_hour.tiers["batch"], five_minutes.tiers["batch"]
    assert long is not None and short is not None
    # 5-minute entries expire between rounds: each round writes at 1.25x and reads nothing, dearer
    # than half of standard; 1-hour entries are read at the next round.
    assert long < short and short > one_hour.tiers["standard"] / 2  # type: ignore[operator]
    assert (
        "batch: 1-hour cache entries outlive the rounds (provider.cache_ttl=1h)" in one_hour.render_tiers()[0]
    )


def test_a_model_sold_at_one_tier_prints_no_tier_line(dataset: tuple[Path, list[Item]]) -> None:
    standard_only = Pricing({"gpt-5": Rates(input=1.25, cached_input=0.125, cache_write=1.25, output=10.0)})
    shown = report(dataset, GPT5, standard_only)
    assert list(shown.estimate.tiers) == ["standard"]
    assert "per tier" not in shown.render()
