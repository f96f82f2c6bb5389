from __future__ import annotations

from pathlib import Path

import numpy as np
import openslide
import pytest
from pydantic import ValidationError

from giant.core import Box
from giant.wsi.synthetic import SHAPES, Finding, write_synthetic_slide


def test_opens_as_an_aperio_pyramid_with_mpp_and_associated_images(svs_path: Path) -> None:
    with openslide.OpenSlide(str(svs_path)) as osr:
        assert osr.properties[openslide.PROPERTY_NAME_VENDOR] == "aperio"
        assert float(osr.properties[openslide.PROPERTY_NAME_MPP_X]) == pytest.approx(0.25)
        assert osr.properties[openslide.PROPERTY_NAME_OBJECTIVE_POWER] == "40"
        assert osr.level_downsamples == (1.0, 4.0, 16.0)
        assert set(osr.associated_images) == {"thumbnail", "label", "macro"}


def test_deterministic_for_a_seed_and_different_across_seeds(tmp_path: Path) -> None:
    def pixels(name: str, seed: int) -> np.ndarray:
        path = write_synthetic_slide(tmp_path / name, 600, 500, seed=seed, tile=128)
        with openslide.OpenSlide(str(path)) as osr:
            return np.asarray(osr.read_region((0, 0), 0, (600, 500)))

    a, b, c = pixels("a.svs", 3), pixels("b.svs", 3), pixels("c.svs", 4)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_has_tissue_and_background(svs_path: Path) -> None:
    with openslide.OpenSlide(str(svs_path)) as osr:
        rgb = np.asarray(osr.read_region((0, 0), 2, osr.level_dimensions[2]).convert("RGB")).astype(int)
    saturation = rgb.max(axis=2) - rgb.min(axis=2)
    tissue = float(np.mean(saturation > 30))
    assert 0.2 < tissue < 0.8


@pytest.mark.parametrize("shape", SHAPES)
def test_each_finding_shape_is_painted_in_its_box(tmp_path: Path, shape: str) -> None:
    box = Box(x=96, y=64, w=64, h=64)
    path = write_synthetic_slide(
        tmp_path / "f.svs", 256, 256, seed=1, findings=[Finding(box=box, shape=shape)]
    )
    with openslide.OpenSlide(str(path)) as osr:
        rgb = np.asarray(osr.read_region((0, 0), 0, (256, 256)).convert("RGB")).astype(int)
    green = (rgb[..., 1] > rgb[..., 0] + 20) & (rgb[..., 1] > rgb[..., 2] + 10) & (rgb[..., 1] < 120)
    ys, xs = np.nonzero(green)
    assert 300 < len(xs) < 64 * 64 * 1.1
    assert box.x - 2 <= xs.min() and xs.max() <= box.right + 2
    assert box.y - 2 <= ys.min() and ys.max() <= box.bottom + 2


def test_rejects_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="inside"):
        write_synthetic_slide(
            tmp_path / "x.svs",
            100,
            100,
            seed=0,
            findings=[Finding(box=Box(x=90, y=0, w=20, h=20), shape="circle")],
        )
    with pytest.raises(ValueError, match="multiple of 16"):
        write_synthetic_slide(tmp_path / "x.svs", 100, 100, seed=0, tile=100)
    with pytest.raises(ValidationError):
        Finding(box=Box(x=0, y=0, w=5, h=5), shape="hexagon")  # type: ignore[arg-type]
