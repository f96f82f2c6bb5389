from __future__ import annotations

import numpy as np
from PIL import Image

from giant.core import Box
from giant.wsi.guides import draw_guides, font_size, guide_lines


def test_guide_labels_are_absolute_level0_coordinates() -> None:
    xs, ys = guide_lines(Box(x=0, y=0, w=100000, h=80000), (1000, 800))
    assert [g.label for g in xs] == [20000, 40000, 60000, 80000]
    assert [g.label for g in ys] == [16000, 32000, 48000, 64000]
    assert [g.pixel for g in xs] == [200, 400, 600, 800]
    assert [g.pixel for g in ys] == [160, 320, 480, 640]


def test_guide_labels_follow_the_box_offset_and_count() -> None:
    xs, ys = guide_lines(Box(x=5000, y=300, w=3000, h=900), (1000, 300), n=2)
    assert [g.label for g in xs] == [6000, 7000]
    assert [g.label for g in ys] == [600, 900]
    assert [g.pixel for g in ys] == [100, 200]


def test_font_size_is_two_percent_of_the_short_side_at_least_8() -> None:
    assert font_size((1000, 800)) == 16
    assert font_size((200, 100)) == 8


def test_draw_guides_marks_border_lines_and_labels_without_touching_the_input() -> None:
    image = Image.new("RGB", (1000, 800), (255, 255, 255))
    out = draw_guides(image, Box(x=0, y=0, w=100000, h=80000))
    assert out.size == image.size and out.mode == "RGB"
    assert image.getpixel((0, 0)) == (255, 255, 255)
    pixels = np.asarray(out).astype(int)
    assert tuple(pixels[400, 0]) == (255, 0, 0)  # red border
    r, g, b = pixels[700, 400]  # a vertical guide line, away from any label
    assert g > r + 50 and g > b + 50
    assert pixels[10:30, 5:60].min() < 100  # the dark "(0, 0)" corner label box
    assert tuple(pixels[700, 500]) == (255, 255, 255)  # between lines: untouched
