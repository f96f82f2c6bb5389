"""The resolver over every layout a user may have, with real slide files opened through OpenSlide.

The files are OpenSlide's own small test slides (an Aperio SVS, a generic pyramidal TIFF and a
two-file DICOM WSI series), copied into each layout.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from giant.core import Item
from giant.data.slides import LAYOUTS, SlideLocation, locate_slide, resolve_slide
from giant.wsi import SlideMissing, SlidePathInvalid
from giant.wsi.slide import Slide

TCGA = "TCGA-AA-0001-01Z-00-DX1"
FILE_ID = "30778552-b67c-4627-8080-1d8ec5bd4e5b"  # the GDC file UUID (CSV column file_id)
SLIDE_UUID = "A44D70FA-4D96-43F4-9DD7-A61535786297"  # the UUID in GDC file names: another one
GTEX = "GTEX-OIZH-0626"


def item(benchmark: str, image_path: str, file_id: str) -> Item:
    return Item(
        benchmark=benchmark,
        benchmark_id="3",
        image_path=image_path,
        prompt="q",
        truth=1,
        metric="accuracy",
        file_id=file_id,
    )


def tcga(benchmark: str = "tcga_expert_vqa") -> Item:
    return item(benchmark, f"{TCGA}.svs", FILE_ID)


def gtex() -> Item:
    return item("gtex", f"{GTEX}.tiff", GTEX)


def put(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target


def dicom_series(fixtures: Path, folder: Path) -> Path:
    """A DICOM WSI series as GTEx exports it: a folder of .dcm files; the first one is opened."""
    put(fixtures / "boxes_1.dcm", folder / "1.2.840.2.dcm")
    return put(fixtures / "boxes_0.dcm", folder / "1.2.840.1.dcm")


# (layout, item, where the file goes relative to the root, fixture file)
CASES = [
    ("flat", tcga, f"{TCGA}.svs", "small.svs"),
    ("group", tcga, f"tcga/{TCGA}.svs", "small.svs"),
    ("group", gtex, f"gtex/{GTEX}.tiff", "boxes.tiff"),
    ("benchmark", tcga, f"tcga_expert_vqa/{TCGA}.svs", "small.svs"),
    ("benchmark", lambda: tcga("tcga_slidebench"), f"tcga_slidebench/{TCGA}.svs", "small.svs"),
    ("gdc_transfer", tcga, f"{FILE_ID}/{TCGA}.{SLIDE_UUID}.svs", "small.svs"),
    ("gdc_transfer", tcga, f"tcga/{FILE_ID}/{TCGA}.{SLIDE_UUID}.svs", "small.svs"),
    ("gdc_transfer", tcga, f"{FILE_ID}/{TCGA}.svs", "small.svs"),
    ("gdc_uuid_suffix", tcga, f"{TCGA}.{SLIDE_UUID}.svs", "small.svs"),
    ("gdc_uuid_suffix", tcga, f"tcga_expert_vqa/{TCGA}.{SLIDE_UUID.lower()}.svs", "small.svs"),
    ("other_extension", gtex, f"gtex/{GTEX}.svs", "small.svs"),
    ("other_extension", tcga, f"{TCGA}.tiff", "boxes.tiff"),
]


@pytest.mark.parametrize(("layout", "make_item", "where", "fixture"), CASES)
def test_each_layout_is_found_named_and_opens(
    tmp_path: Path, openslide_fixtures: Path, layout: str, make_item, where: str, fixture: str
) -> None:
    expected = put(openslide_fixtures / fixture, tmp_path / where)
    if layout == "gdc_transfer":  # the transfer tool's other files in the folder are not slides
        (expected.parent / "annotations.txt").write_text("note\n")
        (expected.parent / "logs").mkdir()
    located = locate_slide(tmp_path, make_item())
    assert located == SlideLocation(path=expected, layout=layout)
    assert resolve_slide(tmp_path, make_item()) == expected
    with Slide.open(located.path) as slide:
        assert slide.level_count >= 1 and slide.width > 0


@pytest.mark.parametrize("folder", [GTEX, f"{GTEX}.dcm", f"gtex/{GTEX}"])
def test_dicom_series_folder_opens_through_openslide(
    tmp_path: Path, openslide_fixtures: Path, folder: str
) -> None:
    first = dicom_series(openslide_fixtures, tmp_path / folder)
    located = locate_slide(tmp_path, gtex())
    assert located == SlideLocation(path=first, layout="dicom_folder")
    with Slide.open(located.path) as slide:
        assert slide.vendor == "dicom" and (slide.width, slide.height) == (16, 16)


def test_every_layout_at_once_first_wins_and_the_rest_are_duplicates_in_order(
    tmp_path: Path, openslide_fixtures: Path
) -> None:
    svs = openslide_fixtures / "small.svs"
    paths = [
        put(svs, tmp_path / f"{TCGA}.svs"),
        put(svs, tmp_path / "tcga" / f"{TCGA}.svs"),
        put(svs, tmp_path / "tcga_expert_vqa" / f"{TCGA}.svs"),
        put(svs, tmp_path / FILE_ID / f"{TCGA}.{SLIDE_UUID}.svs"),
        put(svs, tmp_path / f"{TCGA}.{SLIDE_UUID}.svs"),
        put(openslide_fixtures / "boxes.tiff", tmp_path / f"{TCGA}.tiff"),
        dicom_series(openslide_fixtures, tmp_path / TCGA),
    ]
    for layout in LAYOUTS:  # remove the winner: the next layout in the order takes over
        located = locate_slide(tmp_path, tcga())
        assert located.layout == layout
        assert [located.path, *located.duplicates] == paths
        with Slide.open(located.path):
            pass
        paths.pop(0).unlink()


def test_one_file_reached_through_a_symlinked_folder_is_not_a_duplicate(
    tmp_path: Path, openslide_fixtures: Path
) -> None:
    expected = put(openslide_fixtures / "small.svs", tmp_path / "tcga" / f"{TCGA}.svs")
    (tmp_path / "tcga_expert_vqa").symlink_to(tmp_path / "tcga")
    assert locate_slide(tmp_path, tcga()) == SlideLocation(path=expected, layout="group")


def test_a_slide_added_after_a_lookup_is_found(tmp_path: Path, openslide_fixtures: Path) -> None:
    """The folder listing behind the UUID-suffix layout is reused only while the folder is unchanged."""
    put(openslide_fixtures / "small.svs", tmp_path / "other.svs")
    with pytest.raises(SlideMissing):
        locate_slide(tmp_path, tcga())
    expected = put(openslide_fixtures / "small.svs", tmp_path / f"{TCGA}.{SLIDE_UUID}.svs")
    assert locate_slide(tmp_path, tcga()).path == expected


@pytest.mark.parametrize(
    ("field", "value"),
    [("benchmark", "../outside"), ("benchmark", "a/b"), ("benchmark", ".."), ("file_id", "../outside"),
     ("file_id", "x\\..\\..\\y"), ("image_path", "../outside/GTEX-1.tiff")],
)  # fmt: skip
def test_csv_values_that_would_leave_the_root_are_refused(
    tmp_path: Path, openslide_fixtures: Path, field: str, value: str
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    put(openslide_fixtures / "small.svs", tmp_path / "outside" / f"{TCGA}.svs")
    dicom_series(openslide_fixtures, tmp_path / "outside" / "GTEX-1")
    item = tcga().model_copy(update={field: value})
    with pytest.raises(SlidePathInvalid) as info:
        locate_slide(root, item)
    column = {"benchmark": "benchmark_name"}.get(field, field)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{item.key}: {column} ")


def test_a_non_uuid_file_id_is_never_a_folder_name(tmp_path: Path, openslide_fixtures: Path) -> None:
    """GTEx and PANDA rows carry a sample id or a file name in file_id, not a GDC UUID: a folder
    named after it is only a DICOM series folder, never a GDC download folder."""
    put(openslide_fixtures / "small.svs", tmp_path / GTEX / f"{GTEX}.svs")
    with pytest.raises(SlideMissing):
        locate_slide(tmp_path, gtex())
