"""Billed input of whole episodes under each provider's prompt-caching rule, as a fraction of uncached.

Paper-mode episodes run on real synthetic slides through each provider's real SDK and request
builder (tests/llm/wire_episode.py: a peer that crops until step T and then answers). Every request
body as sent is cut into blocks (giant.llm.caching.wire_request) and billed under the provider's own
rule, the same one the dry-run forecast uses: OpenAI's prefix cache per prompt_cache_key (from 1024
tokens in 128-token steps), Anthropic's breakpoints (reads at 0.1x, writes at 1.25x; 20-block
lookback; nothing below the model's minimum, 4096 tokens for the default Opus 4.5, so one row shows
Opus 4.1, which caches from 1024), and for an OpenAI-compatible server vLLM's block prefix reuse
(share of input reused; its price is unknown). Prices are conf/pricing.yaml's for the model.

Prints one row per provider/protocol and setting: the billed fraction, the share of the input read
from the cache, and the mean billed input tokens per episode (uncached-equivalent). Asserts nothing.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the wire peer lives in tests/

from giant.config import CONF_DIR
from giant.core import Item
from giant.llm.caching import CacheSplit, Request, vllm_prefix, wire_request
from giant.llm.config import ProviderConfig, provider_settings
from giant.llm.factory import provider_class
from giant.llm.pricing import Pricing
from giant.llm.types import Usage
from giant.wsi.synthetic import write_synthetic_slide
from tests.llm.wire_episode import answer_at, run_wire_episode

WIDTH, HEIGHT = 24000, 18000
PROVIDERS: list[tuple[str, dict[str, Any]]] = [
    ("openai", {"protocol": "structured"}),
    ("openai", {"protocol": "tools"}),
    ("anthropic", {"protocol": "structured"}),
    ("anthropic", {"protocol": "tools"}),
    ("anthropic", {"protocol": "structured", "model": "claude-opus-4-1"}),  # caches from 1024 tokens
    ("anthropic", {"protocol": "tools", "model": "claude-opus-4-1"}),
    ("openai_compatible", {"model": "qwen2.5-vl", "base_url": "http://127.0.0.1:8000/v1"}),
]
SETTINGS = "5,10,20,20:5"  # T, or T:max_images_in_context


def item(i: int) -> Item:
    return Item(
        benchmark="tcga_slidebench",
        benchmark_id=str(i),
        image_path=f"slide{i}.svs",
        prompt=f'Question {i}: which tissue is this?\n1. a\n2. b\n3. c\n4. d\nAnswer as {{"answer": N}}.',
        options=("a", "b", "c", "d"),
        truth=2,
        metric="accuracy",
    )


class Row(NamedTuple):
    fraction: float | None  # billed input / the same input uncached (None: price unknown)
    read: float  # share of the input read from the cache
    input_tokens: float  # per episode
    billed_tokens: float | None  # per episode, in uncached-input equivalents


def billed(provider: ProviderConfig, episodes: Sequence[list[dict[str, Any]]], pricing: Pricing) -> Row:
    """One row over the episodes, each episode's requests one cache key. An OpenAI-compatible
    server's bill is unknown: only its reuse is shown."""
    cls = provider_class(provider.name)
    local = provider.name == "openai_compatible"
    rule = vllm_prefix if local else cls.cache_rule
    rates = None if local else pricing.rates(provider.model)
    total = reads = 0
    plain = cached = 0.0
    for bodies in episodes:
        requests: list[Request] = [wire_request(body, cls.image_tokens) for body in bodies]
        splits: list[CacheSplit] = rule(requests, True, provider.model)
        usage = Usage(
            input_tokens=sum(r.tokens for r in requests),
            cached_input_tokens=sum(s.read for s in splits),
            cache_write_tokens=sum(s.write for s in splits),
        )
        total += usage.input_tokens
        reads += usage.cached_input_tokens
        if rates is not None:
            plain += pricing.cost(provider.model, Usage(input_tokens=usage.input_tokens)) or 0.0
            cached += pricing.cost(provider.model, usage) or 0.0
    if rates is None:
        return Row(None, reads / total, total / len(episodes), None)
    return Row(
        cached / plain, reads / total, total / len(episodes), cached / rates.input * 1e6 / len(episodes)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=3, help="episodes (one slide each) per row")
    parser.add_argument("--mode", default="paper", help="agent mode (paper, giant or authors)")
    parser.add_argument("--settings", default=SETTINGS, help=f"rows per provider (default {SETTINGS})")
    args = parser.parse_args()
    pricing = Pricing.load(CONF_DIR / "pricing.yaml")
    logging.getLogger("giant.llm.pricing").setLevel(logging.ERROR)  # the local model has no price
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):  # the peer answers; no key leaves the process
        os.environ.setdefault(variable, "bench-key")
    with tempfile.TemporaryDirectory() as tmp:
        slides = [
            write_synthetic_slide(Path(tmp) / f"slide{i}.svs", WIDTH, HEIGHT, seed=i)
            for i in range(args.items)
        ]
        print(f"mode={args.mode} items={args.items} slide={WIDTH}x{HEIGHT}")
        head = ("provider", "T", "max_img", "billed", "read", "input_tok/ep", "billed_tok/ep")
        print("{:<40} {:>3} {:>7} {:>7} {:>6} {:>12} {:>13}".format(*head))
        for name, overrides in PROVIDERS:
            provider = provider_settings(name, **overrides)
            label = f"{name}/{getattr(provider, 'protocol', 'structured')} {provider.model}"
            for setting in args.settings.split(","):
                t, _, shown = setting.partition(":")
                max_images = int(shown) if shown else None
                episodes = []
                for i, slide in enumerate(slides):
                    traj, bodies = run_wire_episode(
                        provider,
                        item(i),
                        slide,
                        answer_at(int(t)),
                        size=(WIDTH, HEIGHT),
                        seed=i,
                        mode=args.mode,
                        max_steps=int(t),
                        crop_size=provider.crop_size,
                        max_images_in_context=max_images,
                    )
                    assert traj.status == "answered", f"{label} T={t}: {traj.status} {traj.reason}"
                    episodes.append(bodies)
                row = billed(provider, episodes, pricing)
                money = "n/a" if row.fraction is None else f"{row.fraction:.1%}"
                paid = "n/a" if row.billed_tokens is None else f"{row.billed_tokens:.0f}"
                print(
                    f"{label:<40} {t:>3} {shown or '-':>7} {money:>7} {row.read:>6.1%} "
                    f"{row.input_tokens:>12.0f} {paid:>13}"
                )


if __name__ == "__main__":
    main()
