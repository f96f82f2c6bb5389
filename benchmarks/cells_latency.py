"""Time per call of the cells tool: a 1024 px region at 0.5 µm/px.

A synthetic slide at 0.25 µm/px (giant.wsi.synthetic: H&E-like tissue, nuclei every ~10 µm) is written
once; each call names a different 2048 x 2048 level-0 box inside the tissue, which the tool reads at
0.5 µm/px (1024 x 1024 px). Printed per stage, medians over the calls: the slide read alone, the
detection alone (deconvolution, threshold, watershed, per-nucleus measures), the overlay (drawn and
JPEG-encoded), and the whole call as the agent runs it. Run it on the machine you care about (the
numbers in docs/tools.md were taken on 2 shared CPU cores).

    python benchmarks/cells_latency.py [--calls 8] [--threads 2]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
import yaml

from giant.core import Box
from giant.tools import Seen, ToolContext
from giant.tools.cells.nuclei import detect
from giant.tools.cells.settings import CellsSettings
from giant.tools.cells.tool import CellsAction, CellsTool, draw_overlay
from giant.wsi.encode import encode_jpeg
from giant.wsi.slide import Slide
from giant.wsi.synthetic import write_synthetic_slide

CONF = Path(__file__).resolve().parents[1] / "conf" / "tools" / "cells.yaml"
SIDE = 2048  # level-0 px at 0.25 µm/px: 1024 px at 0.5 µm/px


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    cv2.setNumThreads(args.threads)
    settings = CellsSettings.model_validate(yaml.safe_load(CONF.read_text()))
    tool = CellsTool.load(settings)
    with tempfile.TemporaryDirectory() as tmp:
        path = write_synthetic_slide(Path(tmp) / "slide.svs", 12_000, 8_000, seed=5, mpp=0.25)
        with Slide.open(path) as slide:
            boxes = [
                Box(x=1000 + 1200 * i % 8000, y=1500 + 700 * i % 4000, w=SIDE, h=SIDE)
                for i in range(args.calls)
            ]
            reads, detects, overlays, calls, counts = [], [], [], [], []
            for box in boxes:
                start = time.perf_counter()
                region = slide.read_region(box, SIDE // 2)
                rgb = np.asarray(region.image)
                reads.append(time.perf_counter() - start)
                start = time.perf_counter()
                nuclei = detect(rgb, 0.5, tool.thresholds)
                detects.append(time.perf_counter() - start)
                start = time.perf_counter()
                encode_jpeg(draw_overlay(rgb, nuclei, settings.overlay_side))
                overlays.append(time.perf_counter() - start)
                action = CellsAction(x=box.x, y=box.y, width=box.w, height=box.h)
                ctx = ToolContext(slide, "white", keep=lambda image: image.sha256)
                start = time.perf_counter()
                record = asyncio.run(tool.run(ctx, Seen(1, "the overview", box), action))
                calls.append(time.perf_counter() - start)
                counts.append(record.count)
    assert rgb.shape[:2] == (1024, 1024)

    def ms(values: list[float]) -> str:
        low, high = 1000 * min(values), 1000 * max(values)
        return f"{1000 * statistics.median(values):7.0f} ms (min {low:.0f}, max {high:.0f})"

    print(f"cells tool, {args.calls} calls of a 1024 x 1024 px region at 0.5 µm/px, {args.threads} threads")
    print(
        f"  nuclei per region: median {statistics.median(counts):.0f} (min {min(counts)}, max {max(counts)})"
    )
    print(f"  slide read      {ms(reads)}")
    print(f"  detection       {ms(detects)}")
    print(f"  overlay         {ms(overlays)}")
    print(f"  whole call      {ms(calls)}")


if __name__ == "__main__":
    main()
