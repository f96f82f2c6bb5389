"""Scoring latency of the CONCH tool per crop on CPU.

For each model a conch call is timed per crop: scoring the hypotheses against the central square of
a region read from a synthetic slide at the model's input size, once with texts never seen ("new":
one image embedding and one text embedding per hypothesis) and once with texts seen before
("repeat": the scorer keeps text embeddings, so only the image tower runs). The baseline, measured
in the same run, is the slide read alone (what every crop already costs).

Models: `tiny-random` (the test model), the CONCH-sized architecture with random weights (ViT-B/16 at
448 px and the 12-layer text tower: the real model's compute, no download), and CONCH itself when
GIANT_CONCH_WEIGHTS points to its pytorch_model.bin (tokenizer beside it, or GIANT_CONCH_TOKENIZER).

    python benchmarks/conch_latency.py [--crops 5] [--hypotheses 5] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from giant.core import Box
from giant.tools.conch.load import load_conch
from giant.tools.conch.model import CocaEncoder, randomise
from giant.tools.conch.scorer import ConchScorer
from giant.tools.conch.settings import ConchSettings
from giant.tools.conch.spec import CONCH
from giant.tools.conch.tokenize import HashTokenizer
from giant.tools.conch.tool import central_square
from giant.wsi.slide import Slide
from giant.wsi.synthetic import write_synthetic_slide

HYPOTHESES = (
    "tumour cells arranged in solid sheets",
    "normal glandular epithelium",
    "fibrous stroma with scattered lymphocytes",
    "adipose tissue",
    "necrosis",
    "mucin pools",
    "smooth muscle bundles",
    "blood vessels with red cells",
)


def settings(weights: str, tokenizer: str | None = None) -> ConchSettings:
    return ConchSettings(
        weights=weights, tokenizer=tokenizer, max_hypotheses=16, device="cpu", hf_token_env="HF_TOKEN", seed=0
    )


def conch_sized_random() -> ConchScorer:
    model = CocaEncoder(CONCH)
    randomise(model, 0)
    return ConchScorer(model, HashTokenizer(CONCH.vocab_size), torch.device("cpu"), "CONCH-sized, random")


def median_ms(run: Callable[[int], Any], repeats: int) -> float:
    times = []
    for index in range(repeats):
        start = time.perf_counter()
        run(index)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crops", type=int, default=5)
    parser.add_argument("--hypotheses", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    hypotheses = list(HYPOTHESES[: args.hypotheses])
    scorers: list[Any] = [load_conch(settings("tiny-random")), conch_sized_random()]
    weights = os.environ.get("GIANT_CONCH_WEIGHTS")
    if weights:
        scorers.append(load_conch(settings(weights, os.environ.get("GIANT_CONCH_TOKENIZER"))))
    else:
        print("CONCH itself: skipped (set GIANT_CONCH_WEIGHTS=/path/to/pytorch_model.bin)")
    with tempfile.TemporaryDirectory() as tmp:
        path = write_synthetic_slide(Path(tmp) / "bench.svs", 20000, 16000, seed=1)
        boxes = [
            central_square(Box(x=1000 + 2500 * i, y=1500 + 1800 * i, w=3000, h=2200))
            for i in range(args.crops)
        ]
        print(
            f"{args.crops} crops, {len(hypotheses)} hypotheses, {args.threads} CPU threads; median per crop"
        )
        head = ("model", "input", "read ms", "new ms", "repeat ms", "new/read", "repeat/read")
        print(f"{head[0]:28} {head[1]:>6}" + "".join(f" {h:>11}" for h in head[2:]))
        with Slide.open(path) as slide:
            for scorer in scorers:
                size = scorer.input_size
                scorer.score(slide.read_region(boxes[0], size).image, ["warm-up"])
                read = median_ms(lambda i, size=size: slide.read_region(boxes[i], size), args.crops)
                images = [slide.read_region(box, size).image for box in boxes]
                # new: texts never seen (the text tower runs); repeat: the same texts again (cached)
                new = median_ms(
                    lambda i, s=scorer, im=images: s.score(im[i], [f"{h}, crop {i}" for h in hypotheses]),
                    args.crops,
                )
                scorer.score(images[0], hypotheses)
                repeat = median_ms(lambda i, s=scorer, im=images: s.score(im[i], hypotheses), args.crops)
                cells = [
                    f"{read:.1f}",
                    f"{new:.1f}",
                    f"{repeat:.1f}",
                    f"{new / read:.1f}x",
                    f"{repeat / read:.1f}x",
                ]
                print(f"{scorer.label:28} {size:>6}" + "".join(f" {c:>11}" for c in cells))


if __name__ == "__main__":
    main()
