"""The crop geometry rules of paper_facts §2, on numbers alone."""

from __future__ import annotations

import pytest

from giant.core import Box
from giant.wsi.region import choose_level, clamp_box, output_size

W, H = 10000, 8000


@pytest.mark.parametrize(
    ("box", "expected"),
    [
        (Box(x=100, y=200, w=300, h=400), Box(x=100, y=200, w=300, h=400)),  # inside: unchanged
        (Box(x=-50, y=10, w=100, h=100), Box(x=0, y=10, w=100, h=100)),  # left edge
        (Box(x=10, y=-50, w=100, h=100), Box(x=10, y=0, w=100, h=100)),  # top edge
        (Box(x=9950, y=10, w=100, h=100), Box(x=9950, y=10, w=50, h=100)),  # right edge
        (Box(x=10, y=7990, w=100, h=100), Box(x=10, y=7990, w=100, h=10)),  # bottom edge
        (Box(x=-5, y=-5, w=99999, h=99999), Box(x=0, y=0, w=W, h=H)),  # oversized
        (Box(x=20000, y=20000, w=10, h=10), Box(x=W - 1, y=H - 1, w=1, h=1)),  # entirely outside
        (Box(x=10, y=10, w=0, h=-3), Box(x=10, y=10, w=1, h=1)),  # degenerate size
    ],
)
def test_clamp_box(box: Box, expected: Box) -> None:
    assert clamp_box(box, W, H) == expected


DOWNSAMPLES = (1.0, 4.0, 16.0, 64.0)


@pytest.mark.parametrize(
    ("long_side", "size", "level"),
    [
        (400, 1000, 0),  # smaller than S: level 0
        (1000, 1000, 0),
        (4705, 1000, 0),  # d = 4.705, 0.85 d = 3.999 < 4
        (4706, 1000, 1),  # 0.85 d = 4.0001 >= 4
        (18823, 1000, 1),  # just under the level-2 boundary
        (18824, 1000, 2),
        (75294, 1000, 2),
        (75295, 1000, 3),
        (10**6, 1000, 3),  # coarser than the coarsest level: stays at the coarsest
        (2352, 500, 0),
        (2353, 500, 1),
    ],
)
def test_choose_level_is_the_085_biased_best_level(long_side: int, size: int, level: int) -> None:
    assert choose_level(DOWNSAMPLES, long_side, long_side // 2, size) == level
    assert choose_level(DOWNSAMPLES, long_side // 3, long_side, size) == choose_level(
        DOWNSAMPLES, long_side, 1, size
    )


def test_chosen_level_never_undershoots_the_target() -> None:
    for long_side in range(100, 200000, 997):
        level = choose_level(DOWNSAMPLES, long_side, long_side, 1000)
        assert long_side / DOWNSAMPLES[level] >= min(1000, long_side)


@pytest.mark.parametrize(
    ("w", "h", "size", "out"),
    [
        (4000, 3000, 1000, (1000, 750)),
        (3000, 4000, 1000, (750, 1000)),
        (100000, 10, 1000, (1000, 1)),  # the short side never collapses to 0
        (800, 600, 1000, (800, 600)),  # never upscale
        (1000, 999, 1000, (1000, 999)),
    ],
)
def test_output_size(w: int, h: int, size: int, out: tuple[int, int]) -> None:
    assert output_size(w, h, size) == out
