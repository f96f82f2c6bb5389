"""Dollar cost of a call from the provider's own token counts and the YAML price table.

Image tokens are already inside the input count every provider reports; adding them again is the
bug that overstated Claude image cost about 100x in a third-party project. A model missing from the
table costs None ("unknown") with one warning, never a wrong number; so does a tier the table does
not sell the model at (conf/pricing.yaml lists each model's flex and batch rates where they exist).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from giant.errors import ConfigError
from giant.llm.types import Tier, Usage

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# Dated snapshots and aliases that share their base model's price.
_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


class TierRates(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid")
    input: float = Field(ge=0)
    cached_input: float = Field(ge=0)
    cache_write: float = Field(ge=0)
    output: float = Field(ge=0)
    # Anthropic's 1-hour cache TTL (provider.cache_ttl=1h): writes at 2x input; None: not sold.
    cache_write_1h: float | None = Field(None, ge=0)


class Rates(TierRates):
    """A model's standard rates, and those of the discounted tiers it is sold at (None: not sold)."""

    flex: TierRates | None = None
    batch: TierRates | None = None

    def tier(self, tier: Tier) -> TierRates | None:
        return self if tier == "standard" else getattr(self, tier)


class PriceTable(BaseModel):
    model_config = ConfigDict(extra="forbid")
    models: dict[str, Rates]


class Pricing:
    def __init__(self, models: dict[str, Rates]) -> None:
        self.models = models
        self._warned: set[str] = set()

    @classmethod
    def load(cls, path: str | Path) -> Pricing:
        """Relative paths resolve against the working directory, then the project root."""
        file = Path(path)
        if not file.is_absolute() and not file.is_file():
            file = PROJECT_ROOT / file
        if not file.is_file():
            raise ConfigError(f"provider.pricing_file={path}: file not found; point it at conf/pricing.yaml")
        try:
            table = PriceTable.model_validate(yaml.safe_load(file.read_text()))
        except (yaml.YAMLError, ValidationError) as exc:
            first = str(exc).splitlines()[0]
            raise ConfigError(f"provider.pricing_file={path}: invalid price table ({first})") from None
        return cls(table.models)

    def rates(self, model: str) -> Rates | None:
        if model in self.models:
            return self.models[model]
        base = _SNAPSHOT.sub("", model)
        return self.models.get(base)

    def tiers(self, model: str) -> list[Tier]:
        """The tiers the price table sells this model at, standard first."""
        rates = self.rates(model)
        return [] if rates is None else [t for t in get_args(Tier) if rates.tier(t) is not None]

    def cost(self, model: str, usage: Usage, tier: Tier = "standard") -> float | None:
        """input_tokens counts every input token, cache reads and writes included; each part is
        billed once at its own rate (the tier's). Output includes reasoning tokens."""
        known = self.rates(model)
        rates = known.tier(tier) if known is not None else None
        if rates is None:
            what = f"model {model!r}" if known is None else f"model {model!r} at the {tier} tier"
            if what not in self._warned:
                self._warned.add(what)
                log.warning("%s is not in the price table: its cost is reported as unknown", what)
            return None
        long_writes = usage.cache_write_1h_tokens
        if long_writes and rates.cache_write_1h is None:
            what = f"1-hour cache writes of model {model!r} at the {tier} tier"
            if what not in self._warned:
                self._warned.add(what)
                log.warning("%s are not in the price table: their cost is reported as unknown", what)
            return None
        uncached = max(0, usage.input_tokens - usage.cached_input_tokens - usage.cache_write_tokens)
        dollars = (
            uncached * rates.input
            + usage.cached_input_tokens * rates.cached_input
            + (usage.cache_write_tokens - long_writes) * rates.cache_write
            + long_writes * (rates.cache_write_1h or 0.0)
            + usage.output_tokens * rates.output
        )
        return dollars / 1_000_000
