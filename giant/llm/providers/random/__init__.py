"""provider=random: the chance baseline, offline and free (the class in `provider.py`). Its values are
in conf/provider/random.yaml."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from giant.llm.config import ProviderSettings
from giant.registry import register
from giant.roles import Method


@register("provider")
class RandomSettings(ProviderSettings):
    implementation = "giant.llm.providers.random.provider:RandomProvider"
    name: Method[Literal["random"]] = Field(description="The provider; picking `provider=<name>` sets it.")
    seed: Method[int] = Field(description="Seed of the random crops and answers (the run's seed).")


__all__ = ["RandomSettings"]
