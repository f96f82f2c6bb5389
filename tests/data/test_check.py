"""check_slides on real files: present, missing and unreadable slides, opened through OpenSlide."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from giant.core import Item
from giant.data.check import CheckReport, check_slides
from giant.wsi.synthetic import write_synthetic_slide


def item(benchmark: str, benchmark_id: str, image_path: str) -> Item:
    return Item(
        benchmark=benchmark,
        benchmark_id=benchmark_id,
        image_path=image_path,
        prompt="q",
        truth=1,
        metric="accuracy",
    )


@pytest.fixture
def root(tmp_path: Path, openslide_fixtures: Path) -> Path:
    """A shared TCGA slide (flat), a GTEx DICOM series, a truncated and a garbage slide."""
    root = tmp_path / "wsi"
    root.mkdir()
    whole = write_synthetic_slide(tmp_path / "whole.svs", 1200, 900, seed=1)
    shutil.copyfile(whole, root / "TCGA-1.svs")
    series = root / "gtex" / "GTEX-1"
    series.mkdir(parents=True)
    for name in ("boxes_0.dcm", "boxes_1.dcm"):
        shutil.copyfile(openslide_fixtures / name, series / name)
    data = whole.read_bytes()
    (root / "tcga_expert_vqa").mkdir()
    (root / "tcga_expert_vqa" / "TCGA-2.svs").write_bytes(data[: len(data) // 2])  # an interrupted download
    (root / "panda").mkdir()
    (root / "panda" / "p1.tiff").write_bytes(b"not a slide" * 100)
    return root


ITEMS = [
    item("tcga", "1", "TCGA-1.svs"),
    item("tcga_expert_vqa", "1", "TCGA-1.svs"),
    item("tcga_expert_vqa", "2", "TCGA-1.svs"),
    item("tcga_expert_vqa", "3", "TCGA-2.svs"),
    item("gtex", "1", "GTEX-1.tiff"),
    item("gtex", "2", "GTEX-9.tiff"),
    item("panda", "1", "p1.tiff"),
]


def test_rows_per_distinct_slide_with_status_layout_size_and_bytes(
    root: Path, openslide_fixtures: Path
) -> None:
    report = check_slides(ITEMS, root)
    rows = {row.image_path: row for row in report.slides}
    assert len(report.slides) == 5
    shared = rows["TCGA-1.svs"]
    assert shared.status == "present" and shared.layout == "flat" and shared.path == root / "TCGA-1.svs"
    assert shared.tasks == ["tcga", "tcga_expert_vqa"]
    assert shared.keys == ["tcga/1", "tcga_expert_vqa/1", "tcga_expert_vqa/2"]
    assert (shared.width, shared.height) == (1200, 900) and shared.level_count and shared.level_count >= 2
    assert shared.bytes == (root / "TCGA-1.svs").stat().st_size
    dicom = rows["GTEX-1.tiff"]
    assert (dicom.status, dicom.layout, dicom.level_count, dicom.width) == ("present", "dicom_folder", 1, 16)
    dcm_bytes = sum((openslide_fixtures / n).stat().st_size for n in ("boxes_0.dcm", "boxes_1.dcm"))
    assert dicom.bytes == dcm_bytes  # the whole series, not the one file opened
    truncated, garbage = rows["TCGA-2.svs"], rows["p1.tiff"]
    assert (truncated.status, truncated.layout) == ("unreadable", "benchmark")
    assert (garbage.status, garbage.layout) == ("unreadable", "group")
    assert "TCGA-2.svs" in truncated.reason and "p1.tiff" in garbage.reason
    assert truncated.level_count is None and garbage.bytes == 1100
    missing = rows["GTEX-9.tiff"]
    assert (missing.status, missing.layout, missing.keys) == ("missing", None, ["gtex/2"])
    assert "not found" in missing.reason
    assert not report.ok
    assert CheckReport.model_validate_json(report.model_dump_json()) == report
    assert '"ok":false' in report.model_dump_json()


def test_render_is_one_line_per_task_then_the_problems(root: Path) -> None:
    text = check_slides(ITEMS, root).render()
    lines = {line.split()[0]: line.split() for line in text.splitlines() if line.startswith("  ")}
    # task, slides, present, missing, unreadable, bytes (number, unit), layouts
    assert lines["tcga_expert_vqa"][1:5] == ["2", "1", "0", "1"]
    assert lines["gtex"][1:5] == ["2", "1", "1", "0"] and "dicom_folder" in lines["gtex"]
    assert lines["tcga"][1:5] == ["1", "1", "0", "0"] and lines["tcga"][-2:] == ["flat", "1"]
    assert lines["all"][2:6] == ["5", "2", "1", "2"]
    assert "missing GTEX-9.tiff (gtex/2)" in text and "unreadable TCGA-2.svs (tcga_expert_vqa/3)" in text
    assert text.splitlines()[-1].startswith("NOT ready")


def test_all_present_is_ok_and_presence_only_does_not_open(root: Path) -> None:
    ready = check_slides(ITEMS[:3] + ITEMS[4:5], root)
    assert ready.ok and "all slides present and readable" in ready.render()
    unopened = check_slides(ITEMS, root, open_slides=False)
    statuses = {row.image_path: row.status for row in unopened.slides}
    assert statuses["p1.tiff"] == "present" and statuses["GTEX-9.tiff"] == "missing"
    assert all(row.level_count is None for row in unopened.slides)
    assert "presence only" in unopened.render()


def test_duplicates_are_listed(root: Path) -> None:
    (root / "tcga").mkdir()
    shutil.copyfile(root / "TCGA-1.svs", root / "tcga" / "TCGA-1.svs")
    report = check_slides(ITEMS[:1], root)
    assert report.slides[0].duplicates == [root / "tcga" / "TCGA-1.svs"]
    assert (
        f"duplicate TCGA-1.svs: using {root / 'TCGA-1.svs'} (flat), also at {root / 'tcga' / 'TCGA-1.svs'}"
        in (report.render())
    )
