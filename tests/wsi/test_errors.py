"""The slide error tree (giant.wsi.errors): each way a slide fails raises its own subclass, every
one is catchable as `SlideError`, and each message names the slide on one line.

Real files only: a real locator over a real folder, real OpenSlide on generated and corrupted SVS
files, the real direct tile decoder on a tile the test overwrites.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import tifffile

import giant.wsi
from giant.core import Box, Item
from giant.data.slides import locate_slide
from giant.wsi import SlideError, SlideMissing, SlidePathInvalid, SlideUnreadable
from giant.wsi.slide import Slide
from giant.wsi.synthetic import write_synthetic_slide


def item(image_path: str) -> Item:
    return Item(
        benchmark="tcga",
        benchmark_id="3",
        image_path=image_path,
        prompt="Which organ?",
        options=("lung", "liver"),
        truth=1,
        metric="accuracy",
    )


def test_the_tree_is_exported_from_the_package() -> None:
    assert set(giant.wsi.__all__) == {"SlideError", "SlideMissing", "SlidePathInvalid", "SlideUnreadable"}
    for cls in (SlideMissing, SlidePathInvalid, SlideUnreadable):
        assert issubclass(cls, SlideError) and cls is getattr(giant.wsi, cls.__name__)
    # distinct branches: a catch of one never swallows another
    assert not issubclass(SlideMissing, SlideUnreadable) and not issubclass(SlideUnreadable, SlideMissing)
    assert not issubclass(SlidePathInvalid, SlideMissing) and not issubclass(SlideMissing, SlidePathInvalid)


def test_no_file_under_the_root_is_missing_with_the_paths_tried(tmp_path: Path) -> None:
    with pytest.raises(SlideError) as info:
        locate_slide(tmp_path, item("gone.svs"))
    err = info.value
    assert type(err) is SlideMissing and err.slide == "tcga/3"
    assert tmp_path / "gone.svs" in err.tried and tmp_path / "tcga" / "gone.svs" in err.tried
    assert "\n" not in str(err) and str(tmp_path / "gone.svs") in str(err)


@pytest.mark.parametrize("bad", ["../outside.svs", "/etc/passwd", " "])
def test_a_path_leaving_the_root_is_invalid(tmp_path: Path, bad: str) -> None:
    (tmp_path / "outside.svs").write_bytes(b"x")
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(SlideError) as info:
        locate_slide(root, item(bad))
    assert type(info.value) is SlidePathInvalid and info.value.slide == "tcga/3"
    assert str(info.value).startswith("tcga/3: image_path")


def test_opening_no_file_is_missing(tmp_path: Path) -> None:
    path = tmp_path / "absent.svs"
    with pytest.raises(SlideError) as info:
        Slide.open(path)
    assert type(info.value) is SlideMissing and info.value.slide == str(path) and info.value.tried == (path,)
    assert "no such slide file" in str(info.value)


@pytest.mark.parametrize(
    "content", [b"not a slide at all", b"II*\x00" + b"\x00" * 64], ids=["text", "tiff-header"]
)
def test_a_corrupt_file_is_unreadable(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "corrupt.svs"
    path.write_bytes(content)
    with pytest.raises(SlideError) as info:
        Slide.open(path)
    assert type(info.value) is SlideUnreadable and info.value.slide == str(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_a_truncated_slide_is_unreadable(tmp_path: Path) -> None:
    whole = write_synthetic_slide(tmp_path / "whole.svs", 2000, 1500, seed=1)
    path = tmp_path / "truncated.svs"
    path.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    for direct in (True, False):
        with (
            pytest.raises(SlideUnreadable, match=r"truncated\.svs"),
            Slide.open(path, direct_tiles=direct) as s,
        ):
            s.read_region(Box(x=0, y=0, w=s.width, h=s.height), 2000)


def test_an_undecodable_tile_is_unreadable(tmp_path: Path) -> None:
    """A level-0 tile overwritten with zeros: the slide opens (the probe reads the smallest level)
    and the direct decoder fails on that tile, naming the file, the region and the tile."""
    path = write_synthetic_slide(tmp_path / "bad_tile.svs", 2000, 1500, seed=2)
    with tifffile.TiffFile(path) as tif:
        page = tif.pages[0]
        offset, count = page.dataoffsets[0], page.databytecounts[0]  # type: ignore[union-attr]
    with path.open("r+b") as f:
        f.seek(offset)
        f.write(b"\x00" * count)
    with Slide.open(path, direct_tiles=True) as slide, pytest.raises(SlideError) as info:
        slide.read_region(Box(x=0, y=0, w=256, h=256), 256)
    assert type(info.value) is SlideUnreadable and info.value.slide == str(path)
    message = str(info.value)
    assert "bad_tile.svs" in message and "at level 0" in message and "tile 0" in message
    assert isinstance(info.value.__cause__, SlideUnreadable)  # the decoder's own error, kept


def test_a_closed_slide_is_unreadable(tmp_path: Path) -> None:
    slide = Slide.open(write_synthetic_slide(tmp_path / "s.svs", 600, 400, seed=3))
    slide.close()
    with pytest.raises(SlideUnreadable, match="closed"):
        slide.read_region(Box(x=0, y=0, w=100, h=100), 50)


def test_the_errors_survive_pickling(tmp_path: Path) -> None:
    """Errors may cross a process boundary (a worker pool): the class and message must come back."""
    for err in (SlideMissing("m", slide="k", tried=[tmp_path]), SlidePathInvalid("p"), SlideUnreadable("u")):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and str(back) == str(err)
