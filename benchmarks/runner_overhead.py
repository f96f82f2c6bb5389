"""How close the batch runner gets to ideal throughput when the provider is the only cost.

A provider with a fixed simulated latency (asyncio.sleep) answers after a few crops; the real agent
reads and renders real crops from synthetic slides (in worker threads). With concurrency c and an
item taking L seconds of provider time, the ideal is c / L items per second. Rendering costs CPU
(about 90 ms for a 2000 px region at S = 500, 15 ms for a 1:1 crop): with a very short simulated
latency on few (or busy) cores, rendering, not the runner, becomes the bottleneck; real model calls
take seconds, so the default latency is 0.5 s and crops are read 1:1. A zero-latency run first
measures that CPU floor.

Printed: achieved vs ideal throughput and the ratio (goal >= 0.90), and beside it the ratio to the
makespan bound ceil(n / c) * L (the last wave runs partly empty).

    .venv/bin/python benchmarks/runner_overhead.py [--items 100] [--concurrency 8] [--latency 0.5]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import tempfile
import time
from pathlib import Path

from giant.agent.modes import AgentConfig, parse_agent
from giant.config import RunOptions, shipped
from giant.core import Item
from giant.eval.items import JobData
from giant.eval.runner import RunServices, run_eval
from giant.llm.providers.random.provider import format_answer
from giant.llm.types import AnswerAction, CallContext, Conversation, CropAction, ModelTurn, Step, Usage
from giant.wsi.synthetic import write_synthetic_slide


class LatencyProvider:
    """Sleeps `latency` seconds per call; crops until the last allowed call, then answers 1.

    Crops are `side` x `side` level-0 pixels (side = S: read 1:1, no resampling), so the benchmark
    measures the runner's scheduling rather than Lanczos downscaling of big regions.
    """

    name = "latency"
    model = "latency-sim"

    def __init__(self, latency: float, side: int) -> None:
        self.latency = latency
        self.side = side

    async def next_turn(self, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        await asyncio.sleep(self.latency)
        if ctx.must_answer:
            text = format_answer(ctx.answer_space, 1, "Simulated.")
            step = Step(reasoning="Answer.", action=AnswerAction(text=text))
        else:
            crop = CropAction(x=ctx.step * 10, y=0, width=self.side, height=self.side)
            step = Step(reasoning="Crop.", action=crop)
        return ModelTurn(steps=[step], usage=Usage(cost_usd=0.0))


def timed_run(root: Path, items: list[Item], agent: AgentConfig, latency: float, concurrency: int) -> float:
    """Wall seconds of one run_eval over `items` into a fresh output directory."""
    out = Path(tempfile.mkdtemp(dir=root))
    started = time.perf_counter()
    summary = asyncio.run(
        run_eval(
            JobData(items, root / "wsi", "bench"),
            RunServices(LatencyProvider(latency, agent.crop_size), progress_bar=False),
            agent=agent,
            run=shipped(RunOptions, concurrency=concurrency),
            out_dir=out,
            config_hash="bench",
        )
    ).summary
    wall = time.perf_counter() - started
    if summary.counts_by_status != {"answered": len(items)}:
        raise SystemExit(f"benchmark run failed: {summary.counts_by_status} {summary.failure_reasons}")
    return wall


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per provider call (> 0)")
    parser.add_argument("--steps", type=int, default=4, help="T: provider calls per item")
    parser.add_argument("--crop-size", type=int, default=500, help="S: long side of every crop")
    args = parser.parse_args()
    if args.latency <= 0:
        parser.error("--latency must be > 0")

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        slides = [f"s{i}.svs" for i in range(4)]
        for seed, name in enumerate(slides):
            write_synthetic_slide(root / "wsi" / name, 4000, 3000, seed=seed)
        items = [
            Item(
                benchmark="bench",
                benchmark_id=str(i),
                image_path=slides[i % len(slides)],
                prompt="Which shape?",
                options=("a", "b", "c", "d"),
                truth=1,
                metric="accuracy",
            )
            for i in range(args.items)
        ]
        agent = parse_agent({"mode": "giant", "max_steps": args.steps, "crop_size": args.crop_size})
        # Without latency the wall is pure CPU work (crop rendering, JPEG, results): the floor.
        cpu_wall = timed_run(root, items, agent, 1e-6, args.concurrency)
        wall = timed_run(root, items, agent, args.latency, args.concurrency)

    item_s = args.steps * args.latency
    ideal = args.concurrency / item_s
    achieved = args.items / wall
    makespan = math.ceil(args.items / args.concurrency) * item_s
    print(
        f"items={args.items} concurrency={args.concurrency} latency={args.latency}s x {args.steps} calls, "
        f"S={args.crop_size}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )
    print(f"zero-latency run: {cpu_wall:.2f} s ({cpu_wall / args.items * 1000:.0f} ms of CPU work per item)")
    print(f"wall: {wall:.2f} s (makespan lower bound {makespan:.2f} s)")
    print(f"throughput: achieved {achieved:.2f} items/s, ideal {ideal:.2f} items/s")
    print(f"ratio achieved/ideal: {achieved / ideal:.3f} (goal >= 0.90)")
    print(f"ratio vs makespan bound: {makespan / wall:.3f}")


if __name__ == "__main__":
    main()
