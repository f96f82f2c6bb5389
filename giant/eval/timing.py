"""The dry run's clock: how long the run will take per price tier, and for a self-hosted model its
GPU-hours and dollars.

Wall time is what the calls need, run `concurrency` items at a time (each item's calls one after
another, since each waits on the previous reply; patch mode's vote sends its calls side by side, one
wait per item), bounded below by the rate limits (`provider.rpm`
and `provider.tpm`, when set). Per call it assumes:
- standard: CALL_S seconds (a multimodal reasoning model's reply; a short answer is at the low end);
- flex: FLEX_CALL_S seconds (flex requests are served when capacity allows: slower, sometimes queued);
- batch: each step is one batch round for every item at once (giant/llm/batch.py), and a round takes
  BATCH_ROUND_S (minutes when the queue is short, up to the 24 hours the APIs promise), so the run
  takes calls-per-item rounds whatever the concurrency;
- a self-hosted server (provider=openai_compatible): OUTPUT_TOKENS_PER_CALL output tokens at
  `provider.tokens_per_s` per request; low, the concurrent requests decode side by side (continuous
  batching); high, one after another. GPU-hours are that wall time x `provider.gpus`, dollars those
  hours x `provider.gpu_hour_usd`.
- an offline provider (random, scripted) sends no call: no call time, only giant's own.
These are ranges to plan by, not measurements; a pilot run's `wall_s` and `items_per_hour` (MLflow)
measure the real pace.
"""

from __future__ import annotations

from pydantic import BaseModel

from giant.eval.gpu_cost import SECONDS_PER_HOUR
from giant.llm.config import ProviderSettings, SdkSettings
from giant.llm.providers.openai_compatible import OpenAICompatibleSettings

CALL_S = (5.0, 20.0)
FLEX_CALL_S = (10.0, 60.0)
BATCH_ROUND_S = (600.0, 86_400.0)
OUTPUT_TOKENS_PER_CALL = 400  # as the cost estimate assumes (giant.eval.dryrun)
SELF_HOSTED_PREFILL_S = 1.0  # reading the prompt's images and text, per call, on the server


class TierTime(BaseModel):
    tier: str
    low_s: float
    high_s: float
    per_call: str  # the assumption behind it, in words


class GpuTime(BaseModel):
    tokens_per_s: float | None  # per request; None: not set, the time is unknown
    gpus: int
    gpu_hour_usd: float | None
    low_hours: float | None = None  # GPU-hours (wall time x gpus)
    high_hours: float | None = None

    def render(self) -> str:
        if self.low_hours is None or self.high_hours is None:
            return (
                "self-hosted: set provider.tokens_per_s (output tokens per second of one request on your "
                "server) for its wall time, GPU-hours and dollars"
            )
        hours = f"{self.low_hours:,.1f}-{self.high_hours:,.1f} GPU-hours ({self.gpus} GPU(s))"
        if self.gpu_hour_usd is None:
            return f"self-hosted: {hours}; dollars unknown (set provider.gpu_hour_usd)"
        low, high = self.low_hours * self.gpu_hour_usd, self.high_hours * self.gpu_hour_usd
        return f"self-hosted: {hours} x ${self.gpu_hour_usd:,.2f} = ${low:,.2f}-${high:,.2f}"


class TimeEstimate(BaseModel):
    item_runs: int
    calls_per_item_run: int
    concurrency: int
    rate_floor_s: float  # the least the rate limits allow (0: none set)
    tiers: list[TierTime]
    gpu: GpuTime | None = None

    def render(self) -> list[str]:
        floor = self.rate_floor_s
        limits = f", rate limits allow it no faster than {duration(floor)}" if floor else ""
        lines = [
            f"expected wall time ({self.item_runs} item-runs x {self.calls_per_item_run} calls, "
            f"concurrency {self.concurrency}{limits}):"
        ]
        lines += [
            f"  {t.tier}: {duration(t.low_s)} - {duration(t.high_s)} ({t.per_call})" for t in self.tiers
        ]
        if self.gpu is not None:
            lines.append(f"  {self.gpu.render()}")
        return lines


def duration(seconds: float) -> str:
    """A few words for a span: 40 s, 12 min, 3.5 h, 2.1 days."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86_400:.1f} days"


def estimate_time(
    *,
    item_runs: int,
    calls_per_item_run: int,
    input_tokens: int,
    concurrency: int,
    provider: ProviderSettings,
    tiers: list[str],
    concurrent_calls: bool = False,
) -> TimeEstimate:
    """The run's wall time per tier (`tiers`: those the model is sold at; none for a model without
    a price) or, for a self-hosted server, its GPU time."""
    calls = item_runs * calls_per_item_run
    lanes = max(1, min(concurrency, item_runs))
    floor = 0.0
    rpm, tpm = getattr(provider, "rpm", None), getattr(provider, "tpm", None)
    if rpm:
        floor = max(floor, calls / rpm * 60)
    if tpm:
        floor = max(floor, (input_tokens + calls * OUTPUT_TOKENS_PER_CALL) / tpm * 60)

    rounds = 1 if concurrent_calls else calls_per_item_run  # calls an item-run waits for in turn

    def paced(call_s: tuple[float, float], parallel: bool = True) -> tuple[float, float]:
        low, high = ((item_runs * rounds * s / lanes) if parallel else calls * s for s in call_s)
        return max(low, floor), max(high, floor)

    estimate = TimeEstimate(
        item_runs=item_runs,
        calls_per_item_run=calls_per_item_run,
        concurrency=concurrency,
        rate_floor_s=floor,
        tiers=[],
    )
    if not isinstance(provider, SdkSettings):  # random, scripted: nothing is sent, nothing waited for
        said = "no calls sent: giant's own time only"
        estimate.tiers.append(TierTime(tier="offline", low_s=0.0, high_s=0.0, per_call=said))
        return estimate
    if isinstance(provider, OpenAICompatibleSettings):
        tps = provider.tokens_per_s
        gpu = GpuTime(tokens_per_s=tps, gpus=provider.gpus, gpu_hour_usd=provider.gpu_hour_usd)
        if tps:
            call = SELF_HOSTED_PREFILL_S + OUTPUT_TOKENS_PER_CALL / tps
            low = paced((call, call))[0]
            high = paced((call, call), parallel=False)[1]
            estimate.tiers.append(
                TierTime(
                    tier="self-hosted",
                    low_s=low,
                    high_s=high,
                    per_call=f"{call:.0f} s per call: {OUTPUT_TOKENS_PER_CALL} tokens at {tps:g} tokens/s; "
                    "low: concurrent requests decode side by side, high: one after another",
                )
            )
            gpu.low_hours = low * provider.gpus / SECONDS_PER_HOUR
            gpu.high_hours = high * provider.gpus / SECONDS_PER_HOUR
        estimate.gpu = gpu
        return estimate
    words = {
        "standard": (CALL_S, f"{CALL_S[0]:g}-{CALL_S[1]:g} s per call"),
        "flex": (FLEX_CALL_S, f"{FLEX_CALL_S[0]:g}-{FLEX_CALL_S[1]:g} s per call, when capacity allows"),
    }
    for tier in tiers or ["standard"]:
        if tier in words:
            call_s, said = words[tier]
            low, high = paced(call_s)
            estimate.tiers.append(TierTime(tier=tier, low_s=low, high_s=high, per_call=said))
        elif tier == "batch":
            low, high = (rounds * s for s in BATCH_ROUND_S)
            said = (
                f"{rounds} rounds, one per step, of {duration(BATCH_ROUND_S[0])} to "
                f"{duration(BATCH_ROUND_S[1])} each"
            )
            low, high = max(low, floor), max(high, floor)
            estimate.tiers.append(TierTime(tier=tier, low_s=low, high_s=high, per_call=said))
    return estimate
