"""Billed dollars and wall time per item of the same episodes at the standard tier, flex and batch.

The same paper-mode (or giant-mode) episodes, T steps on synthetic slides, run through giant's runner
and each provider's real SDK three ways: synchronous calls to a loopback peer at the standard tier;
OpenAI flex (`provider.service_tier=flex`, with a share of "resource unavailable" 429s); and batch
mode (`provider.batch=true`) against the loopback Files/Batches and Message Batches stub of
tests/llm/batch_stub.py, one batch per step round. One model answers all three (episode i's
WirePeer, seed i, crops until step T and answers there), so every tier sends the same requests.

Every request body as sent is billed under its provider's caching rule (giant.llm.caching, as in
benchmarks/cache_billing.py) at the tier's rates from conf/pricing.yaml:
- OpenAI: the automatic prefix cache; flex and batch bill cached input at their own (halved) cached
  rate. Between batch rounds an in-memory cache entry lives only minutes (5-10 minutes of
  inactivity), so batch with prompt_cache_retention=in_memory is shown with the cache kept (rounds
  back within OPENAI_RETENTION_MIN) and lost (rounds --round-min apart); batch with the default
  setting (auto: the bodies ask for "24h", read from each body as sent) keeps it up to 24 h at the
  same cache prices, so its rounds --round-min apart read what the last round wrote.
- Anthropic (no flex): the cache_control breakpoints; batch is 50% off everything, cache reads and
  writes included. Rounds --round-min apart outlive a 5-minute entry (each round writes at 1.25x and
  reads nothing) but not a 1-hour one (writes at 2x, reads at 0.1x): provider.cache_ttl's default
  comes from these two rows. Caching inside batches is best effort; the kept rows are its best case.
- Gemini (gemini-3-flash-preview): implicit caching, the longest prefix an earlier request of the
  episode had (from 1024 tokens) at the cached rate, no write charge; flex (with a few shed 503s) and
  batch (the Batch API, inlined requests) at half of every rate. The episodes run against the
  loopback Gemini server of tests/llm/gemini_server.py through the real google-genai SDK. Google does
  not publish how long an implicit cache entry lives, so batch is shown with the cache kept between
  rounds and lost. The cached share of billed input at the standard tier is printed after the rows.
Output tokens are --output-tokens per call (reasoning included), the same at every tier.

Wall time per item is modeled, as a loopback peer answers at once: T calls of --call-s at the
standard tier, --flex-call-s under flex, T batch rounds of --round-min in batch mode. The measured
loopback seconds per item (giant's own work, the batch machinery included) are printed beside it.
Ratios are against the standard row of the same provider in the same run; "twice" counts requests
submitted (answered) twice. Prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import copy
import json
import logging
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the peers live in tests/

from giant.agent.modes import parse_agent
from giant.config import CONF_DIR
from giant.core import Item
from giant.llm.batch import batch_collector
from giant.llm.caching import CacheSplit, Request, wire_request
from giant.llm.config import ProviderConfig, provider_settings
from giant.llm.factory import build_provider, provider_class
from giant.llm.ledger import Ledger
from giant.llm.pricing import Pricing
from giant.llm.types import Tier, Usage
from giant.wsi.synthetic import write_synthetic_slide
from tests.eval.runner_fixtures import evaluate
from tests.llm import gemini_server
from tests.llm.batch_stub import BatchStub, serving
from tests.llm.wire_episode import WirePeer, answer_at

WIDTH, HEIGHT = 24000, 18000
OPENAI_RETENTION_MIN = 10  # OpenAI's in-memory prompt cache: 5-10 minutes of inactivity
OPENAI_EXTENDED_MIN = 24 * 60  # prompt_cache_retention "24h": up to 24 hours
ANTHROPIC_TTL_MIN = {"5m": 5, "1h": 60}
FLEX_BUSY = (429, {"error": {"message": "Resource Unavailable", "type": "resource_unavailable"}})
MODELS = {"openai": "gpt-5", "anthropic": "claude-opus-4-5", "gemini": "gemini-3-flash-preview"}
GEMINI_SHED = 3  # flex calls the loopback Gemini server sheds (503) before it answers
QUESTION = re.compile(r"Question (\d+):")


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


def _episode(body: dict[str, Any]) -> int:
    found = QUESTION.search(json.dumps(body))
    assert found, "a request without its question"
    return int(found[1])


def _step(body: dict[str, Any]) -> int:
    turns = body.get("input") or body.get("messages") or []
    return 1 + sum(1 for turn in turns if isinstance(turn, dict) and turn.get("role") == "assistant")


class Model:
    """One answer per (episode, step), whichever tier asks: the tiers' episodes stay identical, and a
    request asked again (a retry) gets the same reply, as a deterministic model would give."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self._peers: dict[int, WirePeer] = {}
        self._replies: dict[tuple[int, int], dict[str, Any]] = {}
        self.answered: Counter[tuple[int, int]] = Counter()  # billed replies per (episode, step)

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        i, n = _episode(body), _step(body)
        if (i, n) not in self._replies:
            peer = self._peers.setdefault(i, WirePeer(answer_at(self.steps), WIDTH, HEIGHT, seed=i))
            kind = peer.policy(n)
            made = peer._messages(body, kind, n) if "messages" in body else peer._responses(body, kind, n)
            self._replies[i, n] = made
        self.answered[i, n] += 1
        return copy.deepcopy(self._replies[i, n])


class TierStub(BatchStub):
    """The batch stub answering with the shared model."""

    def __init__(self, model: Model) -> None:
        super().__init__(answer_at=model.steps, polls=1)
        self.model = model

    def _reply(self, body: dict[str, Any], n: int) -> dict[str, Any]:
        return self.model.reply(body)


@dataclass
class Campaign:
    bodies: list[dict[str, Any]]  # every billed request as sent
    seconds: float  # loopback wall time of the whole campaign
    twice: int  # requests answered (billed) more than once
    busy: int = 0  # flex 429s (not billed)


def _run(cfg: ProviderConfig, items: list[Item], wsi: Path, work: Path, agent: Any, **build: Any) -> float:
    ledger = Ledger(work / "ledger")
    batches = batch_collector(cfg, ledger)
    provider = build_provider(cfg, ledger=ledger, batches=batches, **build)
    started = time.perf_counter()
    out = work / "out"
    summary = asyncio.run(
        evaluate(items, wsi, provider, out, agent=agent, batches=batches, concurrency=len(items))
    )
    assert summary.n_scored == len(items), f"{cfg.name}: {summary.incomplete_reason}"
    return time.perf_counter() - started


def synchronous(
    cfg: ProviderConfig, items: list[Item], wsi: Path, work: Path, agent: Any, busy_share: float
) -> Campaign:
    """Standard or flex: each call on its own through the SDK to the loopback model."""
    model = Model(agent.max_steps)
    sent: list[dict[str, Any]] = []
    rng = random.Random(0)
    busy = 0

    def handler(request: httpx2.Request) -> httpx2.Response:
        nonlocal busy
        body = json.loads(request.content or b"{}")
        if body.get("service_tier") == "flex" and rng.random() < busy_share:
            busy += 1
            return httpx2.Response(FLEX_BUSY[0], json=FLEX_BUSY[1], headers={"retry-after-ms": "1"})
        sent.append(body)
        reply = model.reply(body)
        if "input" in body:  # the Responses API names the tier that billed the reply
            reply["service_tier"] = body.get("service_tier", "default")
        return httpx2.Response(200, json=reply, headers={"x-request-id": f"req_{len(sent)}"})

    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    seconds = _run(cfg, items, wsi, work, agent, http_client=client)
    return Campaign(sent, seconds, sum(1 for n in model.answered.values() if n > 1), busy)


def batched(name: str, items: list[Item], wsi: Path, work: Path, agent: Any, **settings: Any) -> Campaign:
    """Batch mode against the loopback batch stub: one batch per step round."""
    stub = TierStub(Model(agent.max_steps))
    with serving(stub) as url:
        cfg = provider_settings(
            name,
            model=MODELS[name],
            base_url=f"{url}/v1" if name == "openai" else url,
            batch=True,
            batch_wait_s=30.0,
            batch_poll_s=0.02,
            **settings,
        )
        seconds = _run(cfg, items, wsi, work, agent)
    bodies = [r.get("body") or r.get("params") for b in stub.batches for r in b["requests"]]
    twice = sum(1 for n in stub.received.values() if n > 1)
    return Campaign([b for b in bodies if b is not None], seconds, twice)


def billed(
    cfg: ProviderConfig,
    bodies: list[dict[str, Any]],
    pricing: Pricing,
    tier: Tier,
    *,
    kept: bool,
    ttl_1h: bool,
    output_tokens: int,
) -> float:
    """Dollars of the requests, each episode one cache key, under the provider's caching rule at the
    tier's rates; `kept` False: the cache is gone before each request (every call bills as a first
    call), `ttl_1h`: Anthropic's writes are 1-hour entries."""
    cls = provider_class(cfg.name)
    episodes: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for body in sorted(bodies, key=_step):
        episodes[_episode(body)].append(body)
    total = 0.0
    for calls in episodes.values():
        requests: list[Request] = [wire_request(body, cls.image_tokens) for body in calls]
        rule: Callable[..., list[CacheSplit]] = cls.cache_rule
        splits = (
            rule(requests, True, cfg.model) if kept else [rule([r], True, cfg.model)[0] for r in requests]
        )
        writes = sum(s.write for s in splits)
        usage = Usage(
            input_tokens=sum(r.tokens for r in requests),
            cached_input_tokens=sum(s.read for s in splits),
            cache_write_tokens=writes,
            cache_write_1h_tokens=writes if ttl_1h else 0,
            output_tokens=len(requests) * output_tokens,
        )
        cost = pricing.cost(cfg.model, usage, tier)
        assert cost is not None, f"{cfg.model} at {tier} has no price"
        total += cost
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--items", type=int, default=3, help="episodes (one slide each), all in flight at once"
    )
    parser.add_argument("--mode", default="paper", help="agent mode (paper or giant)")
    parser.add_argument("--steps", type=int, default=20, help="T")
    parser.add_argument(
        "--output-tokens", type=int, default=1000, help="output tokens per call, reasoning included"
    )
    parser.add_argument("--call-s", type=float, default=30.0, help="modeled seconds per standard call")
    parser.add_argument("--flex-call-s", type=float, default=90.0, help="modeled seconds per flex call")
    parser.add_argument("--round-min", type=float, default=30.0, help="modeled minutes per batch round")
    parser.add_argument("--flex-busy", type=float, default=0.3, help="share of flex calls answered 429")
    parser.add_argument(
        "--providers", nargs="+", default=["openai", "anthropic", "gemini"], help="the providers to run"
    )
    args = parser.parse_args()
    pricing = Pricing.load(CONF_DIR / "pricing.yaml")
    logging.getLogger("giant").setLevel(logging.ERROR)
    for variable in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
    ):  # the peers answer; no key leaves the process
        os.environ.setdefault(variable, "bench-key")
    t = args.steps
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        wsi = root / "wsi"
        for i in range(args.items):
            write_synthetic_slide(wsi / f"slide{i}.svs", WIDTH, HEIGHT, seed=i)
        items = [item(i) for i in range(args.items)]
        print(
            f"mode={args.mode} T={t} items={args.items} slide={WIDTH}x{HEIGHT} output={args.output_tokens} "
            f"tok/call; modeled: standard call {args.call_s:.0f} s, flex call {args.flex_call_s:.0f} s, "
            f"batch round {args.round_min:.0f} min; flex 429 share {args.flex_busy:.0%}"
        )
        head = ("provider/model", "tier", "$/item", "ratio", "wall/item", "loop s/item", "requests", "twice")
        print("{:<26} {:<48} {:>8} {:>6} {:>9} {:>11} {:>8} {:>5}".format(*head))
        for name in args.providers:
            if name == "gemini":
                gemini_rows(items, wsi, root / name, args, pricing)
                continue
            cfg = provider_settings(name, model=MODELS[name])
            agent = parse_agent({"mode": args.mode, "max_steps": t, "crop_size": cfg.crop_size})
            label = f"{name}/{cfg.model}"
            rows: list[tuple[str, Campaign, Tier, bool, bool, float]] = []
            standard = synchronous(cfg, items, wsi, root / name / "standard", agent, 0.0)
            rows.append(("standard", standard, "standard", True, False, t * args.call_s / 60))
            if name == "openai":
                flex_cfg = provider_settings(name, model=cfg.model, service_tier="flex")
                flex = synchronous(flex_cfg, items, wsi, root / name / "flex", agent, args.flex_busy)
                rows.append(
                    (f"flex ({flex.busy} 429s retried)", flex, "flex", True, False, t * args.flex_call_s / 60)
                )
                memory = batched(
                    name, items, wsi, root / name / "batch", agent, prompt_cache_retention="in_memory"
                )
                kept = f"batch, in_memory, rounds <= {OPENAI_RETENTION_MIN} min: cache kept"
                rows.append((kept, memory, "batch", True, False, t * OPENAI_RETENTION_MIN))
                alive = args.round_min <= _retention_min(memory.bodies)
                state = "cache kept" if alive else "cache lost"
                lost = f"batch, in_memory, rounds {args.round_min:.0f} min: {state}"
                rows.append((lost, memory, "batch", alive, False, t * args.round_min))
                extended = batched(name, items, wsi, root / name / "batch24h", agent)  # the default
                alive = args.round_min <= _retention_min(extended.bodies)
                state = "cache kept" if alive else "cache lost"
                sent = _retention_sent(extended.bodies)
                named = f"batch, {sent} (default), rounds {args.round_min:.0f} min: {state}"
                rows.append((named, extended, "batch", alive, False, t * args.round_min))
            else:
                for ttl in ("5m", "1h"):
                    batch = batched(name, items, wsi, root / name / f"batch{ttl}", agent, cache_ttl=ttl)
                    alive = args.round_min <= ANTHROPIC_TTL_MIN[ttl]
                    state = "cache kept" if alive else "cache lost"
                    rows.append(
                        (
                            f"batch, cache_ttl={ttl}: {state}",
                            batch,
                            "batch",
                            alive,
                            ttl == "1h",
                            t * args.round_min,
                        )
                    )
            base = 0.0
            for tier_label, run, tier, kept_, long, wall_min in rows:
                dollars = (
                    billed(
                        cfg,
                        run.bodies,
                        pricing,
                        tier,
                        kept=kept_,
                        ttl_1h=long,
                        output_tokens=args.output_tokens,
                    )
                    / args.items
                )
                base = base or dollars
                print(
                    f"{label:<26} {tier_label:<48} {dollars:>8.4f} {dollars / base:>5.3f}x "
                    f"{_duration(wall_min):>9} {run.seconds / args.items:>11.2f} "
                    f"{len(run.bodies):>8} {run.twice:>5}"
                )


def gemini_campaign(
    items: list[Item], wsi: Path, work: Path, agent: Any, *, shed: int = 0, **settings: Any
) -> Campaign:
    """The episodes against the loopback Gemini server, synchronous or (batch=True) in batches; the
    billed bodies as the server received them."""
    server = gemini_server.GeminiServer(answer_at=agent.max_steps)
    server.fail = [gemini_server.OVERLOADED] * shed
    with gemini_server.serving(server) as url:
        fast = {"batch_wait_s": 30.0, "batch_poll_s": 0.02} if settings.get("batch") else {}
        cfg = provider_settings("gemini", model=MODELS["gemini"], base_url=url, **fast, **settings)
        seconds = _run(cfg, items, wsi, work, agent)
    assert not server.rejected, server.rejected[0]
    # the first `shed` requests were answered 503 (not billed); their retries are the same bodies
    bodies = server.requests[shed:] + [line["request"] for b in server.batches for line in b["lines"]]
    twice = sum(1 for n in server.batch_keys.values() if n > 1)
    return Campaign(bodies, seconds, twice, shed)


def gemini_request(body: dict[str, Any]) -> dict[str, Any]:
    """A generateContent body in the shape giant.llm.caching.wire_request reads: the contents as its
    messages (model turns as the assistant's), each image as a base64 source it sizes."""

    def part(value: dict[str, Any]) -> dict[str, Any]:
        inline = value.get("inlineData")
        if not inline:
            return value
        data = base64.b64encode(base64.urlsafe_b64decode(inline["data"])).decode()
        return {**value, "inlineData": {"type": "base64", "data": data}}

    messages = [
        {
            "role": "assistant" if turn["role"] == "model" else "user",
            "content": [part(p) for p in turn["parts"]],
        }
        for turn in body.get("contents") or []
    ]
    return {**{k: v for k, v in body.items() if k != "contents"}, "messages": messages}


def gemini_billed(
    bodies: list[dict[str, Any]], pricing: Pricing, tier: Tier, *, kept: bool, output_tokens: int
) -> tuple[float, float]:
    """Dollars of the bodies under Gemini's implicit cache at the tier's rates, and the cached share
    of their input tokens."""
    cls = provider_class("gemini")
    model = MODELS["gemini"]
    episodes: dict[int, list[Request]] = defaultdict(list)
    for body in sorted(bodies, key=_gemini_step):
        episodes[_episode(body)].append(wire_request(gemini_request(body), cls.image_tokens))
    total, cached, tokens = 0.0, 0, 0
    for requests in episodes.values():
        splits = (
            cls.cache_rule(requests, True, model)
            if kept
            else [cls.cache_rule([r], True, model)[0] for r in requests]
        )
        usage = Usage(
            input_tokens=sum(r.tokens for r in requests),
            cached_input_tokens=sum(s.read for s in splits),
            output_tokens=len(requests) * output_tokens,
        )
        cost = pricing.cost(model, usage, tier)
        assert cost is not None, f"{model} at {tier} has no price"
        total, cached, tokens = total + cost, cached + usage.cached_input_tokens, tokens + usage.input_tokens
    return total, cached / max(tokens, 1)


def _gemini_step(body: dict[str, Any]) -> int:
    return 1 + sum(1 for turn in body.get("contents") or [] if turn.get("role") == "model")


def gemini_rows(items: list[Item], wsi: Path, work: Path, args: argparse.Namespace, pricing: Pricing) -> None:
    t = args.steps
    cfg = provider_settings("gemini", model=MODELS["gemini"])
    agent = parse_agent({"mode": args.mode, "max_steps": t, "crop_size": cfg.crop_size})
    standard = gemini_campaign(items, wsi, work / "standard", agent)
    flex = gemini_campaign(items, wsi, work / "flex", agent, shed=GEMINI_SHED, service_tier="flex")
    batch = gemini_campaign(items, wsi, work / "batch", agent, batch=True)
    rows: list[tuple[str, Campaign, Tier, bool, float]] = [
        ("standard", standard, "standard", True, t * args.call_s / 60),
        (f"flex ({flex.busy} 503s retried)", flex, "flex", True, t * args.flex_call_s / 60),
        ("batch, rounds within the cache's life: cache kept", batch, "batch", True, t * args.round_min),
        (f"batch, rounds {args.round_min:.0f} min: cache lost", batch, "batch", False, t * args.round_min),
    ]
    label = f"gemini/{cfg.model}"
    base, share = 0.0, 0.0
    for tier_label, run, tier, kept, wall_min in rows:
        dollars, cached = gemini_billed(
            run.bodies, pricing, tier, kept=kept, output_tokens=args.output_tokens
        )
        dollars /= args.items
        base, share = base or dollars, share or cached
        print(
            f"{label:<26} {tier_label:<48} {dollars:>8.4f} {dollars / base:>5.3f}x "
            f"{_duration(wall_min):>9} {run.seconds / args.items:>11.2f} {len(run.bodies):>8} {run.twice:>5}"
        )
    print(f"{label}: cached share of billed input at the standard tier, T={t}: {share:.1%}")


def _retention_sent(bodies: list[dict[str, Any]]) -> str:
    """The prompt_cache_retention every body asked for ("none" when they sent none)."""
    sent = {body.get("prompt_cache_retention") or "none" for body in bodies}
    assert len(sent) == 1, f"bodies ask for different retentions: {sorted(sent)}"
    return sent.pop()


def _retention_min(bodies: list[dict[str, Any]]) -> float:
    """How long OpenAI keeps the bodies' cache entries, from the retention they asked for."""
    return OPENAI_EXTENDED_MIN if _retention_sent(bodies) == "24h" else OPENAI_RETENTION_MIN


def _duration(minutes: float) -> str:
    return f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"


if __name__ == "__main__":
    main()
