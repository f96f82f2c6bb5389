"""What many concurrent episodes of one slide share (a batch campaign keeps hundreds open at once):
its open handle (shared_slide) and its crop tissue mask (crop_tissue), kept small (CropTissue)."""

from __future__ import annotations

import os
import shutil
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

from giant.core import Box
from giant.wsi import SlideMissing, tissue
from giant.wsi.slide import Slide, open_slides, shared_slide
from giant.wsi.tissue import CROP_MASK_SIDE, CropTissue, TissueMask, crop_tissue


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_holders_of_one_file_share_its_slide_until_the_last_leaves(svs_path: Path, tmp_path: Path) -> None:
    copy = shutil.copyfile(svs_path, tmp_path / "copy.svs")
    before = open_slides()
    with shared_slide(svs_path) as a, shared_slide(svs_path) as b, shared_slide(copy) as c:
        assert a is b and a is not c  # one slide per file, however many holders
        assert open_slides() == before + 2
        with shared_slide(svs_path) as d:
            assert d is a
        region = a.read_region(Box(x=0, y=0, w=512, h=512), 64)  # still open: a holder remains
        assert region.image.size == (64, 64)
    assert open_slides() == before
    with pytest.raises(Exception, match="closed"):
        a.read_region(Box(x=0, y=0, w=512, h=512), 64)  # closed with its last holder
    with shared_slide(svs_path) as again:
        assert again is not a  # opened anew


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts /proc/self/fd (Linux)")
def test_open_files_follow_the_slides_not_the_holders(svs_path: Path) -> None:
    base = _fds()
    with shared_slide(svs_path):
        one = _fds() - base
        held = [shared_slide(svs_path) for _ in range(50)]
        for holder in held:
            holder.__enter__()
        assert _fds() - base == one
        for holder in held:
            holder.__exit__(None, None, None)
    assert _fds() == base


def test_a_missing_file_is_the_error_an_episode_alone_gets(tmp_path: Path) -> None:
    with pytest.raises(SlideMissing), shared_slide(tmp_path / "absent.svs"):
        pass
    assert open_slides() == 0


def test_a_rewritten_file_opens_anew(svs_path: Path, tmp_path: Path) -> None:
    path = Path(shutil.copyfile(svs_path, tmp_path / "slide.svs"))
    with shared_slide(path) as first:
        os.utime(path, ns=(1, 1))  # another time stamp: another file as far as the pool knows
        with shared_slide(path) as second:
            assert second is not first


def test_crop_fractions_are_the_tissue_mask_fractions(svs_path: Path) -> None:
    with Slide.open(svs_path) as slide:
        full = TissueMask.from_slide(slide, CROP_MASK_SIDE)
    packed = CropTissue(full)
    rng = np.random.default_rng(3)
    boxes = [Box(x=0, y=0, w=4096, h=3072), Box(x=4000, y=3000, w=500, h=500), Box(x=5000, y=0, w=9, h=9)]
    for _ in range(200):
        x, y = int(rng.integers(0, 4096)), int(rng.integers(0, 3072))
        boxes.append(Box(x=x, y=y, w=int(rng.integers(1, 3000)), h=int(rng.integers(1, 3000))))
    assert [packed.fraction(box) for box in boxes] == [full.fraction(box) for box in boxes]
    assert packed._bits.nbytes * 60 < full._integral.nbytes  # one bit a cell, not an int64 sum


def test_crop_mask_is_built_once_per_slide(svs_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    from_slide = TissueMask.from_slide

    def counted(slide: Slide, long_side: int) -> TissueMask:
        built.append(str(slide.path))
        return from_slide(slide, long_side)

    monkeypatch.setattr(TissueMask, "from_slide", counted)
    monkeypatch.setattr(tissue, "_crop_masks", OrderedDict())  # none built by an earlier test
    with shared_slide(svs_path) as slide:
        found: list[CropTissue] = []
        threads = [threading.Thread(target=lambda: found.append(crop_tissue(slide))) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(found) == 8 and all(mask is found[0] for mask in found)
    assert built == [str(svs_path)]  # once, though eight threads asked at the same time
