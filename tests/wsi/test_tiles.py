from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from giant.core import Box
from giant.wsi import tiles
from giant.wsi.slide import Slide
from giant.wsi.tiles import TileReader, resize, shrink_factors

from .test_slide import _drop_first_tile, psnr, reference


@pytest.mark.parametrize("resample", [Image.Resampling.LANCZOS, Image.Resampling.BILINEAR])
def test_banded_resize_matches_a_single_resize(
    resample: Image.Resampling, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tiles, "cv2", None)  # the Pillow path, as without OpenCV
    rng = np.random.default_rng(0)
    image = Image.fromarray(rng.integers(0, 255, (900, 1200, 3), dtype=np.uint8))
    box = (10.25, 20.5, 1190.0, 870.75)
    banded = np.asarray(resize(image, (1000, 719), box, resample)).astype(float)
    whole = np.asarray(image.resize((1000, 719), resample, box=box)).astype(float)
    assert banded.shape == whole.shape
    # Pillow's fixed-point coefficients depend on the output size, so bands differ by rounding only:
    # > 40 dB even on pure noise, and no visible seam where the bands meet (row 360).
    error = np.abs(banded - whole).mean(axis=(1, 2))
    assert 10 * np.log10(255**2 / np.mean((banded - whole) ** 2)) > 40
    assert error[358:362].max() < 3 * error.mean() + 0.5


@pytest.mark.parametrize("opencv", [True, False], ids=["opencv", "pillow"])
@pytest.mark.parametrize(
    ("box", "out"),
    [
        ((10.25, 3.5, 190.75, 150.0), (120, 100)),
        ((0.5, 0.5, 200.5, 180.5), (200, 180)),
        ((3, 7, 250, 230), (130, 120)),
    ],
)
def test_resize_samples_at_pillow_pixel_centres(
    opencv: bool,
    box: tuple[float, float, float, float],
    out: tuple[int, int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bilinear sampling reproduces a linear ramp exactly, so each output pixel must hold the ramp's
    value at its centre: value(u) = u - 0.5 for pixel j = value j spanning [j, j + 1). A half-pixel
    slip in the OpenCV path's coordinates adds 0.5 to the rounding error (<= 0.5)."""
    if opencv and tiles.cv2 is None:
        pytest.skip("OpenCV is not installed")
    if not opencv:
        monkeypatch.setattr(tiles, "cv2", None)
    across = np.tile(np.arange(256, dtype=np.uint8), (240, 1))  # red: x, green: y
    down = np.tile(np.arange(240, dtype=np.uint8)[:, None], (1, 256))
    image = Image.fromarray(np.stack([across, down, across], axis=-1))
    result = np.asarray(resize(image, out, box, Image.Resampling.BILINEAR)).astype(float)
    assert result.shape == (out[1], out[0], 3)
    x0, y0, x1, y1 = box
    sx, sy = (x1 - x0) / out[0], (y1 - y0) / out[1]
    want_x = x0 + (np.arange(out[0]) + 0.5) * sx - 0.5
    want_y = y0 + (np.arange(out[1]) + 0.5) * sy - 0.5
    inner = slice(3, -3)  # away from the border, where each library clamps in its own way
    assert np.abs(result[inner, inner, 0] - want_x[None, inner]).max() <= 0.75
    assert np.abs(result[inner, inner, 1] - want_y[inner, None]).max() <= 0.75


def test_direct_tiles_cover_every_level_of_a_synthetic_svs(svs_path: Path) -> None:
    with Slide.open(svs_path) as slide:
        reader = TileReader.for_slide(svs_path, slide.vendor, slide.level_dimensions)
        assert reader is not None
        assert all(reader.has_level(i) for i in range(slide.level_count))
        reader.close()


def test_other_vendors_stay_with_openslide(openslide_fixtures: Path) -> None:
    path = openslide_fixtures / "boxes_0.dcm"
    with Slide.open(path) as slide:
        assert slide.vendor == "dicom"
        assert TileReader.for_slide(path, slide.vendor, slide.level_dimensions) is None


def test_real_aperio_rgb_jpeg_with_shared_tables_decodes_like_openslide(openslide_fixtures: Path) -> None:
    """small.svs stores RGB (not YCbCr) JPEG tiles with JPEGTables: the case scanners produce."""
    path = openslide_fixtures / "small.svs"
    box = Box(x=0, y=0, w=16, h=16)
    with Slide.open(path) as fast, Slide.open(path, direct_tiles=False) as general:
        reader = TileReader.for_slide(path, fast.vendor, fast.level_dimensions)
        assert reader is not None and reader.has_level(0)
        reader.close()
        a = np.asarray(fast.read_region(box, 100).image)
        b = np.asarray(general.read_region(box, 100).image)
    assert np.array_equal(a, b)


@pytest.mark.parametrize(
    ("tile", "shrink", "factors"),
    [
        (256, 1.0, (1, 1)),
        (256, 1.99, (1, 1)),  # below 2x: no DCT scaling, the final resize does it all
        (256, 2.0, (2, 1)),
        (256, 4.7, (4, 1)),
        (256, 12.8, (8, 1)),
        (256, 16.0, (8, 2)),  # libjpeg stops at 1/8: a box reduce does the rest
        (256, 100.0, (8, 8)),
        (240, 3.0, (2, 1)),  # 240 / 2 = 120 has no divisor <= 1.5 but 1
        (240, 6.0, (4, 1)),
        (240, 24.0, (8, 3)),
        (200, 16.0, (8, 1)),  # DCT scale first: 200 / 8 = 25 is odd
        (100, 16.0, (4, 1)),  # 100 is not a multiple of 8, 25 has no divisor <= 4 but 1
    ],
)
def test_shrink_factors(tile: int, shrink: float, factors: tuple[int, int]) -> None:
    assert shrink_factors(tile, tile, shrink) == factors


def test_dct_scaled_tiles_match_a_full_decode_box_reduced(svs_path: Path) -> None:
    """Each factor, through libjpeg's scaled IDCT (and a box reduce past 1/8), against the full
    level-0 pixels box-reduced by the same factor, at an origin that is not a tile corner."""
    with Slide.open(svs_path, direct_tiles=False) as general:
        full = general.read_region(Box(x=0, y=0, w=4096, h=3072), 4096).image
        reader = TileReader.for_slide(svs_path, general.vendor, general.level_dimensions)
    assert reader is not None
    try:
        for shrink in (2.5, 4.0, 8.0, 16.0):
            image, origin, factor = reader.read(0, 300, 200, 3900, 2900, shrink, (255, 255, 255))
            assert factor == int(shrink)
            assert origin == (300 // factor * factor, 200 // factor * factor)
            assert image.size == (-(-3900 // factor) - 300 // factor, -(-2900 // factor) - 200 // factor)
            ref = full.crop(
                (origin[0], origin[1], origin[0] + image.width * factor, origin[1] + image.height * factor)
            )
            assert psnr(image, ref.reduce(factor)) > 30
    finally:
        reader.close()


@pytest.mark.parametrize(
    ("box", "size", "level", "scale"),
    [
        (Box(x=17, y=33, w=2000, h=1500), 1000, 0, 2),
        (Box(x=0, y=0, w=4096, h=3072), 1000, 0, 4),
        (Box(x=0, y=0, w=4096, h=3072), 24, 2, 8),
    ],
)
def test_dct_scaled_crops_stay_close_to_the_lanczos_reference(
    svs_path: Path, box: Box, size: int, level: int, scale: int
) -> None:
    with Slide.open(svs_path) as slide:
        region = slide.read_region(box, size)
        ds = slide.level_downsamples[level]
        assert region.level == level
        assert shrink_factors(256, 256, box.w / ds / region.image.width)[0] == scale
    ref = reference(svs_path, box, level, region.image.size)
    assert psnr(region.image, ref) > 30


def test_rgb_jpeg_with_shared_tables_decodes_at_every_dct_scale(openslide_fixtures: Path) -> None:
    """small.svs (RGB JPEG + JPEGTables, as Aperio writes): the tables are spliced in and the RGB
    colour space is kept (libjpeg would guess YCbCr from the component ids: errors of ~150)."""
    path = openslide_fixtures / "small.svs"
    with Slide.open(path, direct_tiles=False) as general:
        full = general.read_region(Box(x=0, y=0, w=16, h=16), 16).image
        reader = TileReader.for_slide(path, general.vendor, general.level_dimensions)
    assert reader is not None
    try:
        for shrink in (2, 4, 8):
            image, origin, factor = reader.read(0, 0, 0, 16, 16, shrink, (255, 255, 255))
            assert (origin, factor, image.size) == ((0, 0), shrink, (16 // shrink, 16 // shrink))
            error = np.abs(np.asarray(image, dtype=int) - np.asarray(full.reduce(shrink), dtype=int))
            assert error.max() <= 8
    finally:
        reader.close()


def test_missing_tiles_take_the_fill_colour_at_dct_scale(svs_path: Path, tmp_path: Path) -> None:
    sparse = tmp_path / "sparse.svs"
    _drop_first_tile(svs_path, sparse)
    with Slide.open(sparse) as slide:
        region = slide.read_region(Box(x=0, y=0, w=1200, h=1200), 300, fill="black")  # 1/4 scale
    pixels = np.asarray(region.image)
    assert region.level == 0 and region.image.size == (300, 300)
    assert tuple(pixels[10, 10]) == (0, 0, 0)  # inside the dropped 256 px tile (64 output px)
    assert tuple(pixels[200, 200]) != (0, 0, 0)


def test_concurrent_reads_match_sequential_reads(svs_path: Path) -> None:
    """Many reads at once share one helper thread (queued helpers are cancelled, not awaited)."""
    boxes = [Box(x=97 * i, y=61 * i, w=600 + 250 * i, h=500 + 200 * i) for i in range(10)]
    with Slide.open(svs_path) as slide:
        alone = [np.asarray(slide.read_region(b, 400).image) for b in boxes]
        with ThreadPoolExecutor(max_workers=6) as pool:
            together = list(pool.map(lambda b: np.asarray(slide.read_region(b, 400).image), boxes * 3))
    for i, pixels in enumerate(together):
        assert np.array_equal(pixels, alone[i % len(boxes)])


@pytest.mark.parametrize("before", [None, "3"])
def test_opencv_import_leaves_the_blas_thread_setting_as_it_was(
    before: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if before is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", before)
    assert tiles._import_cv2() is tiles.cv2
    assert os.environ.get("OPENBLAS_NUM_THREADS") == before
