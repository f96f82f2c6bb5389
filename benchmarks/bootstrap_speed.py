"""Prints how long 1000 bootstrap replicates take on a MultiPathQA-sized item set (934 items): one
run's interval, and a paired comparison of two runs (giant.compare) against two separate bootstraps
measured in the same run."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from giant.compare.stats import paired_bootstrap
from giant.eval.bootstrap import bootstrap

ITEMS = 934


def _ms(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    rng = np.random.default_rng(0)
    truth = [int(t) for t in rng.integers(1, 31, size=ITEMS)]
    pred_a: list[int | None] = [int(p) if p else None for p in rng.integers(0, 31, size=ITEMS)]
    pred_b: list[int | None] = [int(p) if p else None for p in rng.integers(0, 31, size=ITEMS)]
    for metric in ("accuracy", "balanced_accuracy"):
        one = _ms(lambda m=metric: bootstrap(truth, pred_a, m, replicates=1000))
        two = one + _ms(lambda m=metric: bootstrap(truth, pred_b, m, replicates=1000))
        paired = _ms(lambda m=metric: paired_bootstrap(truth, pred_a, pred_b, m, replicates=1000))
        print(
            f"{metric}: 1000 x {ITEMS} replicates in {one:.1f} ms; paired B - A {paired:.1f} ms "
            f"vs two unpaired {two:.1f} ms ({paired / two:.2f}x)"
        )


if __name__ == "__main__":
    main()
