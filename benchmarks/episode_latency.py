"""Wall time of one T=20 navigation episode with the random provider on a 40000 x 30000 synthetic slide.

The random provider costs nothing and answers instantly, so the figure is the agent's own overhead:
the overview, 19 crop reads off the event loop, guides, JPEG encoding, image files and the record.
Prints seconds; asserts nothing.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from giant.agent.episode import run_episode
from giant.agent.modes import parse_agent
from giant.core import Item
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.wsi.synthetic import write_synthetic_slide

ITEM = Item(
    benchmark="tcga_slidebench",
    benchmark_id="1",
    image_path="bench.svs",
    prompt='Which option fits?\n1. a\n2. b\n3. c\n4. d\nAnswer as {"answer": N}.',
    options=("a", "b", "c", "d"),
    truth=1,
    metric="accuracy",
)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        slide = write_synthetic_slide(root / "bench.svs", 40000, 30000, seed=0)
        print(f"slide_write_s {time.perf_counter() - started:.2f}")
        provider = build_provider(provider_settings("random", seed=0))
        cfg = parse_agent({"mode": "giant", "max_steps": 20, "crop_size": 1000})
        for run_index in range(3):
            started = time.perf_counter()
            traj = asyncio.run(
                run_episode(ITEM, slide, provider, cfg, out_dir=root / f"out{run_index}", run_index=run_index)
            )
            seconds = time.perf_counter() - started
            print(
                f"episode_s {seconds:.2f} run={run_index} status={traj.status} "
                f"calls={traj.totals.calls} crops={traj.totals.crops}"
            )


if __name__ == "__main__":
    main()
