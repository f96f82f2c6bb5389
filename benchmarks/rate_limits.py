"""A campaign at the provider's rate limit: makespan over its bound, and the share of requests answered 429.

Item-runs of `--calls` calls each (one after another, as an episode's steps are) run in `--concurrency`
lanes through giant's real providers and SDKs (openai, anthropic, gemini) against the loopback API of
tests/llm/ratelimit_server.py, which answers after `--latency` seconds and enforces a requests- or a
tokens-per-minute limit with a one-second quantum, sending each provider's own rate-limit headers (or,
for Gemini, only a 429's QuotaFailure and RetryInfo). Each scenario runs twice: `provider.rpm`/`tpm`
unset (the pacer learns the limit from the server) and set to the server's limit (`--settings`
picks one). The server runs in a
process of its own, as a provider's does.

The bound is max((calls - burst) / rate + latency, ceil(item-runs / concurrency) x calls x latency),
burst being the one second's worth the server lets through at once. "paid" is the requests the server
answered (it bills no 429); a good run pays exactly the calls it needs. Prints numbers, asserts nothing.

The issue's target: --item-runs 24 --calls 4 --concurrency 8 --latency 1 --limit 60 (about 100 s a
scenario, 12 scenarios: run one style with --styles). The default is a quicker copy (4 per second).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the loopback API lives in tests/

from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.llm.runtime import estimate_tokens
from giant.llm.types import Conversation, ProviderError, TextPart, UserMessage
from tests.llm.conftest import make_ctx
from tests.llm.ratelimit_server import RateLimitedAPI, Style, serving_apart

MODELS = {"openai": "gpt-5", "anthropic": "claude-opus-4-5", "gemini": "gemini-3-flash-preview"}
KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"}
OUTPUT_CAP = 20
PROMPT = Conversation(
    system="You are a pathologist.",
    messages=[
        UserMessage(parts=[TextPart(text="Which cancer type is this? " + "Describe the slide. " * 100)])
    ],
)


def tokens_per_call(style: Style) -> int:
    """What the server counts against a tokens limit per call (Anthropic's and Gemini's: input only)."""
    inputs = estimate_tokens(PROMPT)
    return inputs + OUTPUT_CAP if style == "openai" else inputs


async def campaign(
    style: Style, url: str, args: argparse.Namespace, settings: dict[str, float]
) -> tuple[float, int]:
    base = f"{url}/v1" if style == "openai" else url
    extra = {"thinking_budget": None} if style == "anthropic" else {}
    cfg = provider_settings(
        style, model=MODELS[style], base_url=base, max_tokens=OUTPUT_CAP, **extra, **settings
    )
    provider = build_provider(cfg)
    queue = list(range(args.item_runs))
    finished = 0

    async def lane() -> None:
        nonlocal finished
        while queue:
            n = queue.pop(0)
            try:
                for step in range(1, args.calls + 1):
                    await provider.next_turn(PROMPT, make_ctx(item_key=f"bench/{n}", step=step))
                finished += 1
            except ProviderError as exc:
                print(f"  item-run {n} failed: {exc}"[:200])

    started = time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(args.concurrency)))
    return time.perf_counter() - started, finished


def bound_s(args: argparse.Namespace, rate_per_s: float) -> float:
    calls = args.item_runs * args.calls
    burst = max(1.0, rate_per_s)  # one second's worth
    rated = (calls - burst) / rate_per_s + args.latency
    serial = math.ceil(args.item_runs / args.concurrency) * args.calls * args.latency
    return max(rated, serial)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--item-runs", type=int, default=8)
    parser.add_argument("--calls", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--limit", type=float, default=240, help="requests per minute the server allows")
    parser.add_argument("--styles", default="openai,anthropic,gemini")
    parser.add_argument("--kinds", default="requests,tokens")
    parser.add_argument("--settings", default="unset,set", help="provider.rpm/tpm unset, set, or both")
    args = parser.parse_args()
    for style in args.styles.split(","):
        os.environ.setdefault(KEYS[style], "loopback-key")
    rate = args.limit / 60.0
    print(
        f"item_runs={args.item_runs} calls={args.calls} concurrency={args.concurrency} "
        f"latency_s={args.latency} limit={args.limit:g}/min bound_s={bound_s(args, rate):.1f}"
    )
    for style in args.styles.split(","):
        for kind in args.kinds.split(","):
            tpm = args.limit * tokens_per_call(style)  # the same calls per second, as tokens
            for configured in [choice == "set" for choice in args.settings.split(",")]:
                server_limits = {"rpm": args.limit} if kind == "requests" else {"tpm": tpm}
                settings = server_limits if configured else {}
                api = RateLimitedAPI(style, latency_s=args.latency, **server_limits)  # type: ignore[arg-type]
                with serving_apart(api) as (url, state):
                    makespan, finished = asyncio.run(campaign(style, url, args, settings))
                    api = state()
                needed = args.item_runs * args.calls
                sent = api.answered + api.refused
                print(
                    f"{style:9s} {kind:8s} {'set' if configured else 'unset':5s} "
                    f"answered={finished}/{args.item_runs} makespan_s={makespan:.1f} "
                    f"ratio={makespan / bound_s(args, rate):.3f} share_429={api.refused / max(1, sent):.3f} "
                    f"paid={api.answered} needed={needed}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
