"""The pilot's forecast of a campaign's wall time against the campaign's measured time.

For each limit (none; a requests-per-minute limit; with --kinds, a tokens-per-minute one) a pilot of
`--pilot` item-runs runs, then a campaign of `--item-runs`, both in `--concurrency` lanes through
giant's real OpenAI provider and SDK against the loopback API of tests/llm/ratelimit_server.py (in a
process of its own), which answers after `--latency` seconds and enforces the limit with a one-second
quantum and OpenAI's headers; `provider.rpm`/`tpm` stay unset, so the limit is the one the pilot read
from the headers. An item-run is `--calls` calls one after another, each followed by `--own-s` seconds
of giant's own work (a crop). The pilot's item-runs and its pacing record (giant.eval.pacing) go to
giant.eval.pilot_time, as a dry run with `pilot=` reads them from the pilot's folder; the forecast is
printed beside the measured makespan. Prints numbers, asserts nothing.

The issue's target: within 20% with and without the limit, at --item-runs 24 --calls 4
--concurrency 8 --latency 1 --limit 60 (the default; about two minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the loopback API lives in tests/

from giant.eval.pacing import pacing
from giant.eval.pilot_time import PilotTime, pilot_time
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.llm.runtime import estimate_tokens
from giant.llm.types import Conversation, TextPart, UserMessage
from giant.record.results import ResultRecord
from giant.record.summary import Pacing
from tests.llm.conftest import make_ctx
from tests.llm.ratelimit_server import RateLimitedAPI, serving_apart

OUTPUT_CAP = 20
PROMPT = Conversation(
    system="You are a pathologist.",
    messages=[
        UserMessage(parts=[TextPart(text="Which cancer type is this? " + "Describe the slide. " * 100)])
    ],
)


async def run(url: str, item_runs: int, args: argparse.Namespace) -> tuple[float, list[ResultRecord], Pacing]:
    """Item-runs in lanes; the makespan, one record per item-run and the run's pacing record."""
    cfg = provider_settings("openai", model="gpt-5", base_url=f"{url}/v1", max_tokens=OUTPUT_CAP)
    provider = build_provider(cfg)
    queue, records = list(range(item_runs)), []

    async def lane() -> None:
        while queue:
            n = queue.pop(0)
            started = time.perf_counter()
            for step in range(1, args.calls + 1):
                await provider.next_turn(PROMPT, make_ctx(item_key=f"bench/{n}", step=step))
                await asyncio.sleep(args.own_s)
            record = {"key": f"bench/{n}", "benchmark": "bench", "run_index": 0, "seed": 0, "truth": 0}
            fields = {"status": "answered", "calls": args.calls, "seconds": time.perf_counter() - started}
            records.append(ResultRecord.model_validate(record | fields))

    started = time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(args.concurrency)))
    makespan = time.perf_counter() - started
    record = pacing(provider, wall_s=makespan, lanes=args.concurrency)
    await provider.client.close()  # in this event loop, before asyncio.run closes it
    assert record is not None, "no call reached the server"
    return makespan, records, record


def scenario(kind: str, args: argparse.Namespace) -> tuple[PilotTime, float]:
    """The pilot's forecast and the campaign's measured makespan under one limit."""
    tokens = estimate_tokens(PROMPT) + OUTPUT_CAP
    limits = {"none": {}, "requests": {"rpm": args.limit}, "tokens": {"tpm": args.limit * tokens}}[kind]
    measured = []
    for item_runs in (args.pilot, args.item_runs):
        api = RateLimitedAPI("openai", latency_s=args.latency, **limits)  # type: ignore[arg-type]
        with serving_apart(api) as (url, _):
            measured.append(asyncio.run(run(url, item_runs, args)))
    (_, records, record), (makespan, _, _) = measured
    forecast = pilot_time(
        records, records, record, item_runs=args.item_runs, concurrency=args.concurrency, settings={}
    )
    assert forecast is not None
    return forecast, makespan


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pilot", type=int, default=4, help="item-runs of the pilot")
    parser.add_argument("--item-runs", type=int, default=24, help="item-runs of the campaign")
    parser.add_argument("--calls", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--own-s", type=float, default=0.05, help="giant's own seconds per step")
    parser.add_argument("--limit", type=float, default=60, help="requests per minute the server allows")
    parser.add_argument("--kinds", default="none,requests", help="none,requests,tokens")
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "loopback-key")
    print(
        f"pilot={args.pilot} item_runs={args.item_runs} calls={args.calls} concurrency={args.concurrency} "
        f"latency_s={args.latency} own_s={args.own_s} limit={args.limit:g}/min"
    )
    for kind in args.kinds.split(","):
        forecast, makespan = scenario(kind, args)
        print(
            f"limit={kind:8s} forecast_s={forecast.forecast_s:.1f} "
            f"interval_s={forecast.low_s:.1f}-{forecast.high_s:.1f} measured_s={makespan:.1f} "
            f"forecast/measured={forecast.forecast_s / makespan:.3f} set_by={forecast.set_by} "
            f"pilot_latency_s={forecast.latency_s:.2f} pilot_own_s_per_call={forecast.own_s_per_call:.3f} "
            f"pilot_429={forecast.requests_429}/{forecast.requests}"
        )


if __name__ == "__main__":
    main()
