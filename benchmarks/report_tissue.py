"""The run report's tissue fractions: what a coarser tissue mask saves per slide and what it costs in
agreement with the patch sampler's 2048 px mask (the baseline, measured in the same run).

The report builds one mask per slide of a job (934 slides for all of MultiPathQA), so the build time
per slide is the number that matters; agreement is the mean and the largest absolute difference of
the tissue fraction over random square boxes from 1/100 to 1/5 of the slide's short side.

    python benchmarks/report_tissue.py [--width 40000] [--height 30000] [--boxes 300]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from crop_latency import build_slide

from giant.core import Box
from giant.report.navigation import MASK_SIDE
from giant.wsi.slide import Slide
from giant.wsi.tissue import MASK_LONG_SIDE, TissueMask

SIDES = (MASK_LONG_SIDE, MASK_SIDE, 512)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--width", type=int, default=40000)
    parser.add_argument("--height", type=int, default=30000)
    parser.add_argument("--boxes", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    path = build_slide(args.width, args.height)
    rng = np.random.default_rng(0)
    with Slide.open(path) as slide:
        short = min(slide.width, slide.height)
        boxes = []
        for _ in range(args.boxes):
            side = int(rng.integers(short // 100, short // 5))
            x, y = int(rng.integers(0, slide.width - side)), int(rng.integers(0, slide.height - side))
            boxes.append(Box(x=x, y=y, w=side, h=side))
        masks: dict[int, TissueMask] = {}
        times: dict[int, float] = {}
        for side in SIDES:
            runs = []
            for _ in range(args.repeats):
                started = time.perf_counter()
                masks[side] = TissueMask.from_slide(slide, side)
                runs.append(time.perf_counter() - started)
            times[side] = statistics.median(runs)
    base = np.array([masks[MASK_LONG_SIDE].fraction(box) for box in boxes])
    print(f"slide {args.width}x{args.height}, {args.boxes} boxes of side {short // 100}..{short // 5}")
    print(f"{'mask side':>9} {'build ms':>9} {'vs 2048':>8} {'mean |diff|':>12} {'max |diff|':>11}")
    for side in SIDES:
        diff = np.abs(np.array([masks[side].fraction(box) for box in boxes]) - base)
        ratio = times[side] / times[MASK_LONG_SIDE]
        print(f"{side:>9} {1000 * times[side]:>9.0f} {ratio:>7.2f}x {diff.mean():>12.4f} {diff.max():>11.4f}")


if __name__ == "__main__":
    main()
