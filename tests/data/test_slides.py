from __future__ import annotations

from pathlib import Path

import pytest

from giant.core import Item
from giant.data.slides import SlideLocation, locate_all, resolve_slide
from giant.wsi import SlideMissing, SlidePathInvalid


def item(image_path: str, benchmark: str = "tcga_expert_vqa") -> Item:
    return Item(
        benchmark=benchmark, benchmark_id="7", image_path=image_path, prompt="q", truth=0, metric="accuracy"
    )


def touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x")
    return path


def test_flat_layout_wins_over_grouped(tmp_path: Path) -> None:
    flat = touch(tmp_path / "A.svs")
    touch(tmp_path / "tcga" / "A.svs")
    assert resolve_slide(tmp_path, item("A.svs")) == flat


@pytest.mark.parametrize(
    ("benchmark", "group"),
    [("tcga", "tcga"), ("tcga_slidebench", "tcga"), ("tcga_expert_vqa", "tcga"), ("gtex", "gtex"),
     ("panda", "panda"), ("demo_shapes", "demo_shapes")],
)  # fmt: skip
def test_grouped_layout(tmp_path: Path, benchmark: str, group: str) -> None:
    expected = touch(tmp_path / group / "B.tiff")
    assert resolve_slide(tmp_path, item("B.tiff", benchmark)) == expected


def test_inner_dotdot_that_stays_inside_is_allowed(tmp_path: Path) -> None:
    expected = touch(tmp_path / "C.svs")
    assert resolve_slide(tmp_path, item("sub/../C.svs")) == tmp_path / "C.svs" == expected


@pytest.mark.parametrize(
    "bad", ["/etc/passwd", "../outside.svs", "a/../../outside.svs", "..\\x.svs", "~/x.svs", " "]
)
def test_paths_leaving_the_root_are_rejected(tmp_path: Path, bad: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    touch(tmp_path / "outside.svs")
    with pytest.raises(SlidePathInvalid) as info:
        resolve_slide(root, item(bad))
    assert "\n" not in str(info.value) and "tcga_expert_vqa/7" in str(info.value)


def test_missing_names_every_exact_path(tmp_path: Path) -> None:
    with pytest.raises(SlideMissing) as info:
        resolve_slide(tmp_path, item("D.svs"))
    message = str(info.value)
    assert "\n" not in message
    for folder in (tmp_path, tmp_path / "tcga", tmp_path / "tcga_expert_vqa"):
        assert str(folder / "D.svs") in message


def test_locate_all_lists_every_problem(tmp_path: Path) -> None:
    touch(tmp_path / "ok.svs")
    items = [item("ok.svs"), item("gone.svs", "gtex"), item("../escape.svs", "panda")]
    located = locate_all(tmp_path, items)
    assert located["tcga_expert_vqa/7"] == SlideLocation(path=tmp_path / "ok.svs", layout="flat")
    assert isinstance(located["gtex/7"], SlideMissing) and "not found" in str(located["gtex/7"])
    assert isinstance(located["panda/7"], SlidePathInvalid) and "leaves the WSI root" in str(
        located["panda/7"]
    )


@pytest.mark.parametrize(
    ("bad", "named"),
    [("A\0.svs", "holds a NUL character"), ("x" * 5000 + ".svs", "a file name of 5,004 bytes")],
)
def test_a_path_no_file_system_can_hold_is_refused_not_a_traceback(
    tmp_path: Path, bad: str, named: str
) -> None:
    """A NUL made os.stat raise ValueError, a 5,000-byte name ENAMETOOLONG, both escaping the search."""
    with pytest.raises(SlidePathInvalid) as info:
        resolve_slide(tmp_path, item(bad))
    assert named in str(info.value) and "\n" not in str(info.value)


def test_a_directory_or_fifo_where_the_slide_should_be_is_named(tmp_path: Path) -> None:
    import os

    (tmp_path / "E.svs").mkdir()
    os.mkfifo(tmp_path / "F.svs")
    with pytest.raises(SlideMissing, match=r"E\.svs is a directory, not a file"):
        resolve_slide(tmp_path, item("E.svs"))
    with pytest.raises(SlideMissing, match=r"F\.svs is a FIFO \(named pipe\), not a file"):
        resolve_slide(tmp_path, item("F.svs"))
