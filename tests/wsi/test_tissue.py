from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from giant.core import Box
from giant.wsi.slide import Slide
from giant.wsi.tissue import TissueMask, otsu_threshold, sample_boxes

PINK = (220, 120, 180)


def _picture() -> Image.Image:
    """400 x 300 view of a 4000 x 3000 slide: a pink block with a small hole, plus a tiny speck."""
    image = Image.new("RGB", (400, 300), (245, 245, 245))
    draw = ImageDraw.Draw(image)
    draw.rectangle((100, 100, 299, 199), fill=PINK)  # tissue: level-0 (1000..3000, 1000..2000)
    draw.rectangle((200, 150, 202, 152), fill=(245, 245, 245))  # 3 x 3 hole
    draw.rectangle((20, 20, 22, 22), fill=PINK)  # 3 x 3 speck
    return image


@pytest.fixture(scope="module")
def mask() -> TissueMask:
    return TissueMask.from_image(_picture(), 4000, 3000)


def test_otsu_splits_two_modes() -> None:
    values = np.concatenate([np.full(500, 10), np.full(500, 200)]).astype(np.uint8)
    assert 10 <= otsu_threshold(values) < 200


def test_mask_keeps_tissue_fills_holes_and_drops_specks(mask: TissueMask) -> None:
    assert mask.mask.shape == (300, 400)
    assert mask.mask[150, 201]  # hole filled
    assert not mask.mask[21, 21]  # speck removed
    assert mask.fraction_total == pytest.approx(200 * 100 / (400 * 300), rel=0.05)


@pytest.mark.parametrize(
    ("box", "expected"),
    [
        (Box(x=1200, y=1200, w=500, h=500), 1.0),
        (Box(x=0, y=0, w=900, h=900), 0.0),
        (Box(x=500, y=1000, w=1000, h=1000), 0.5),
        (Box(x=2500, y=1500, w=10000, h=10000), 1 / 9),  # only the part inside the slide counts
        (Box(x=5000, y=5000, w=100, h=100), 0.0),  # outside the slide
        (Box(x=1500, y=1500, w=3, h=3), 1.0),  # smaller than one mask cell
    ],
)
def test_fraction_of_level0_boxes(mask: TissueMask, box: Box, expected: float) -> None:
    assert mask.fraction(box) == pytest.approx(expected, abs=0.03)


def test_mask_from_a_real_slide(svs_path: Path) -> None:
    with Slide.open(svs_path) as slide:
        tissue = TissueMask.from_slide(slide)
        view = np.asarray(slide.read_region(Box(x=0, y=0, w=4096, h=3072), 512).image).astype(int)
    assert tissue.mask.shape == (1536, 2048)
    saturated = (view.max(axis=2) - view.min(axis=2)) > 40
    coarse = tissue.mask[::4, ::4][: saturated.shape[0], : saturated.shape[1]]
    assert np.mean(coarse == saturated) > 0.9
    assert 0.2 < tissue.fraction_total < 0.8


def test_sample_boxes_meet_the_request(mask: TissueMask) -> None:
    boxes = sample_boxes(mask, 30, 224, 224, 0.9, np.random.default_rng(0))
    assert len(boxes) == 30
    for b in boxes:
        assert (b.w, b.h) == (224, 224)
        assert b.x >= 0 and b.right <= 4000 and b.y >= 0 and b.bottom <= 3000
        assert mask.fraction(b) >= 0.9
    assert len(set(boxes)) > 20


def test_sample_boxes_random_sides_and_determinism(mask: TissueMask) -> None:
    a = sample_boxes(mask, 10, 300, 900, 0.25, np.random.default_rng(5))
    b = sample_boxes(mask, 10, 300, 900, 0.25, np.random.default_rng(5))
    assert a == b
    assert all(b.w == b.h and 300 <= b.w <= 900 and mask.fraction(b) >= 0.25 for b in a)
    assert len({b.w for b in a}) > 3


def test_sample_boxes_best_effort_when_tissue_is_scarce(
    mask: TissueMask, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        boxes = sample_boxes(mask, 3, 2500, 2500, 0.9, np.random.default_rng(1))
    assert len(boxes) == 3
    assert "best of the rest" in caplog.text
    assert all(mask.fraction(b) < 0.9 for b in boxes)


def test_sample_boxes_on_a_blank_slide_uses_uniform_positions() -> None:
    blank = TissueMask.from_image(Image.new("RGB", (100, 80), "white"), 1000, 800)
    assert blank.fraction_total == 0.0
    boxes = sample_boxes(blank, 4, 100, 100, 0.0, np.random.default_rng(2))
    assert len(boxes) == 4 and len(set(boxes)) == 4


@pytest.mark.parametrize(
    ("n", "lo", "hi", "tissue"), [(-1, 10, 10, 0.5), (1, 0, 10, 0.5), (1, 20, 10, 0.5), (1, 10, 10, 1.5)]
)
def test_sample_boxes_rejects_bad_requests(mask: TissueMask, n: int, lo: int, hi: int, tissue: float) -> None:
    with pytest.raises(ValueError, match="sampling request"):
        sample_boxes(mask, n, lo, hi, tissue, np.random.default_rng(0))
    with pytest.raises(ValueError, match="do not fit"):
        sample_boxes(mask, 1, 3001, 4000, 0.0, np.random.default_rng(0))
