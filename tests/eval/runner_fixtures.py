"""Shared pieces of the runner tests: real synthetic slides, items, and test-only providers.

The providers here implement the Provider protocol (not one of our classes): the scripted provider
replays the same lines for every item, so it cannot express a seeded per-call fault rate.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections import Counter
from pathlib import Path

from giant.agent.modes import AgentConfig, parse_agent
from giant.config import RunOptions, shipped
from giant.core import Item
from giant.eval.items import JobData
from giant.eval.runner import RunServices, run_eval
from giant.llm.batch import BatchCollector
from giant.llm.config import provider_settings
from giant.llm.providers.random.provider import RandomProvider, format_answer, random_label
from giant.llm.types import (
    AnswerAction,
    CallContext,
    Conversation,
    CropAction,
    ModelTurn,
    ParseError,
    Provider,
    Step,
    TransientError,
    Usage,
)
from giant.record.summary import Summary
from giant.wsi.synthetic import write_synthetic_slide

SLIDE_W, SLIDE_H = 2000, 1500
SLIDES = ["a.svs", "b.svs"]  # written once per test module by the `wsi_root` fixture (conftest.py)
AGENT = parse_agent({"mode": "giant", "max_steps": 3, "crop_size": 256})
FAULTS = ("transient", "parse", "out_of_bounds", "hang")


def write_slides(root: Path, names: list[str]) -> Path:
    for seed, name in enumerate(names):
        write_synthetic_slide(root / name, SLIDE_W, SLIDE_H, seed=seed)
    return root


def make_items(n: int, slides: list[str], *, benchmark: str = "demo", metric: str = "accuracy") -> list[Item]:
    """Four-option questions spread over the slides; truth cycles 1..4."""
    return [
        Item.model_validate(
            {
                "benchmark": benchmark,
                "benchmark_id": str(i),
                "image_path": slides[i % len(slides)],
                "prompt": f"Question {i}: which shape is present?",
                "options": ("circle", "square", "triangle", "cross"),
                "truth": i % 4 + 1,
                "metric": metric,
            }
        )
        for i in range(n)
    ]


async def evaluate(
    items: list[Item],
    wsi_root: Path,
    provider: Provider,
    out_dir: Path,
    *,
    agent: AgentConfig = AGENT,
    resume_from: Path | None = None,
    batches: BatchCollector | None = None,
    **settings: object,
) -> Summary:
    """run_eval with the tests' fixed hashes and no progress bar (unless `progress=True`); `batches`
    is the collector a provider in batch mode was built with; the other `settings` change the run
    options conf/config.yaml ships (giant.config.shipped)."""
    progress = bool(settings.pop("progress", False))
    cfg = shipped(RunOptions, **settings)
    return (
        await run_eval(
            JobData(items, wsi_root, "da7a"),
            RunServices(provider, batches=batches, progress_bar=progress),
            agent=agent,
            run=cfg,
            out_dir=out_dir,
            config_hash="c0ffee",
            resume_from=resume_from,
        )
    ).summary


def random_provider() -> RandomProvider:
    return RandomProvider(provider_settings("random"))


def _rng(*parts: object) -> random.Random:
    digest = hashlib.sha256(json.dumps(parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


class CountingProvider:
    """Wraps a real provider and counts its calls per (item key, run index)."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.calls: Counter[tuple[str, int]] = Counter()

    async def next_turn(self, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        self.calls[ctx.item_key, ctx.run_index] += 1
        return await self.inner.next_turn(conversation, ctx)


class GatedProvider(CountingProvider):
    """Once `close()` is called, every call parks forever: the test can then kill the run while each
    running episode waits on the model, the way a real kill mostly finds it."""

    def __init__(self, inner: Provider) -> None:
        super().__init__(inner)
        self.closed = False
        self.parked = 0

    async def next_turn(self, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        if self.closed:
            self.parked += 1
            await asyncio.Event().wait()
        return await super().next_turn(conversation, ctx)


class FaultyProvider:
    """Crops, then answers at call `answer_at`; each call fails with probability `fault_rate`,
    drawn from (seed, item, run, call) so the faults are the same on every run of the test.

    Faults, equally likely among `faults`: a transient error, an unparseable reply, a crop far
    outside the slide, and a hang longer than any item timeout used with it. Every call costs
    `cost` dollars and takes `latency` seconds.
    """

    name = "faulty"
    model = "faulty-1"

    def __init__(
        self,
        *,
        seed: int = 0,
        fault_rate: float = 0.0,
        cost: float = 0.0,
        latency: float = 0.0,
        answer_at: int = 2,
        faults: tuple[str, ...] = FAULTS,
    ) -> None:
        self.seed, self.fault_rate, self.cost = seed, fault_rate, cost
        self.latency, self.answer_at, self.fault_kinds = latency, answer_at, faults
        self.calls = 0
        self.faults: Counter[str] = Counter()

    async def next_turn(self, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        self.calls += 1
        rng = _rng(self.seed, ctx.item_key, ctx.run_index, ctx.seed, ctx.step)
        if self.latency:
            await asyncio.sleep(self.latency)
        usage = Usage(input_tokens=1000, output_tokens=100, cost_usd=self.cost)
        if rng.random() < self.fault_rate:
            fault = rng.choice(self.fault_kinds)
            self.faults[fault] += 1
            if fault == "transient":
                raise TransientError("simulated 503 after the SDK's retries", usage=usage)
            if fault == "parse":
                raise ParseError("simulated invalid JSON reply", usage=usage, raw_text="{not json")
            if fault == "hang":
                await asyncio.sleep(3600)
            if not ctx.must_answer:
                box = CropAction(x=ctx.slide_width * 3, y=ctx.slide_height * 3, width=5000, height=5000)
                step = Step(reasoning="A crop outside the slide.", action=box)
                return ModelTurn(steps=[step], usage=usage)
        if ctx.must_answer or ctx.step >= self.answer_at or not ctx.allow_crop:
            label = random_label(ctx.answer_space, rng)
            text = format_answer(ctx.answer_space, label, "Simulated report.")
            answer = Step(reasoning="Answering.", action=AnswerAction(text=text))
            return ModelTurn(steps=[answer], usage=usage)
        side = min(ctx.slide_width, ctx.slide_height) // 2
        crop = CropAction(x=rng.randint(0, ctx.slide_width - side), y=0, width=side, height=side)
        return ModelTurn(steps=[Step(reasoning="Zooming in.", action=crop)], usage=usage)
