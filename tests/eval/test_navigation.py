"""Where the model looked, against real annotations: a pyramidal slide written here with a target
region, its annotations as a QuPath GeoJSON export and as a pyramidal label mask (PANDA's form: classes
in the first channel), and real episodes from the scripted provider. A crop over the target at 1 µm/px
is a hit; one beside it is not, in both formats; a slide without annotations is "not annotated"."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
import tifffile

from giant.agent.episode import run_episode
from giant.agent.modes import parse_agent
from giant.config import RunOptions, shipped
from giant.core import Box, Item
from giant.eval.annotation_settings import AnnotationSettings
from giant.eval.annotations import Annotations
from giant.eval.navigation import item_navigation, summarize_navigation
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.record import ResultRecord
from giant.record.navigation import Navigation, revisits, seen_mpp
from giant.record.trajectory import Region, Trajectory
from giant.wsi.synthetic import write_synthetic_slide

WIDTH, HEIGHT = 8192, 6144
MPP = 0.25
TARGET = Box(x=2048, y=2048, w=1024, h=1024)  # the lesion, in level-0 px
CROP = 500  # crop_size S: a 2000 px box is shown at 2000 * 0.25 / 500 = 1.0 µm/px
ON = Box(x=1560, y=1560, w=2000, h=2000)  # holds the whole target (26% of the box)
BESIDE = Box(x=5000, y=2048, w=2000, h=2000)  # tissue, no target
NAV = shipped(RunOptions).navigation  # hit at or finer than 1.0 µm/px, 10% of the crop on target


@pytest.fixture(scope="module")
def slide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("nav")
    return write_synthetic_slide(folder / "slides" / "case_01.svs", WIDTH, HEIGHT, seed=3, mpp=MPP)


def _geojson(folder: Path) -> Path:
    t = TARGET
    ring = [[t.x, t.y], [t.right, t.y], [t.right, t.bottom], [t.x, t.bottom], [t.x, t.y]]
    hole = [[t.x + 10, t.y + 10], [t.x + 20, t.y + 10], [t.x + 20, t.y + 20], [t.x + 10, t.y + 10]]
    features = [
        {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [ring, hole]},
         "properties": {"objectType": "annotation", "classification": {"name": "Tumor"}}},
        # another class over the crop beside: not a target, so never a hit
        {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [
            [[5000, 2048], [7000, 2048], [7000, 4048], [5000, 4048], [5000, 2048]]]},
         "properties": {"classification": {"name": "Stroma"}}},
    ]  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "case_01.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    return path


def _mask(folder: Path) -> Path:
    """A pyramidal RGB TIFF at the slide's geometry, class values in the first channel (PANDA's form):
    3 (Gleason 3, a target) over TARGET, 1 (stroma) over BESIDE's area; 1/1, 1/4, 1/16 levels."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "case_01_mask.tiff"
    levels = []
    for factor in (1, 4, 16):
        values = np.zeros((HEIGHT // factor, WIDTH // factor, 3), dtype=np.uint8)
        values[2048 // factor : 4048 // factor, 5000 // factor : 7000 // factor, 0] = 1
        t = TARGET
        values[t.y // factor : t.bottom // factor, t.x // factor : t.right // factor, 0] = 3
        levels.append(values)
    with tifffile.TiffWriter(path) as tif:
        for n, values in enumerate(levels):  # reduced levels as OpenSlide's generic TIFF reads them
            tif.write(values, tile=(256, 256), photometric="rgb", compression="zlib", subfiletype=int(n > 0),
                      metadata=None)  # fmt: skip
    return path


def _settings(folder: Path, **changes: object) -> AnnotationSettings:
    return AnnotationSettings.model_validate(
        {
            "path": folder,
            "targets": ["Tumor", "gleason_3", "gleason_4", "gleason_5"],
            "class_map": "radboud",
            "class_maps": {"radboud": {"1": "stroma", "3": "gleason_3"}},
            "slide_providers": None,
            "mask_downsample": None,
        }
        | changes
    )


def _episode(tmp: Path, slide: Path, boxes: list[Box], name: str) -> Trajectory:
    lines = [
        {"reasoning": "look", "action": {"type": "crop", "x": b.x, "y": b.y, "width": b.w, "height": b.h}}
        for b in boxes
    ] + [{"reasoning": "done", "action": {"type": "answer", "text": "A"}}]
    script = tmp / f"{name}.jsonl"
    script.write_text("".join(json.dumps(line) + "\n" for line in lines))
    provider = build_provider(provider_settings("scripted", script=str(script)))
    item = Item(benchmark="demo_shapes", benchmark_id=name, prompt="Which?", image_path=slide.name,
                truth=1, options=("A", "B"), metric="accuracy")  # fmt: skip
    agent = parse_agent({"mode": "giant", "max_steps": len(boxes) + 1, "crop_size": CROP})
    return asyncio.run(run_episode(item, slide, provider, agent, out_dir=tmp / name, thresholds=NAV))


@pytest.fixture(scope="module")
def episodes(slide: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Trajectory]:
    tmp = tmp_path_factory.mktemp("episodes")
    return {
        "on": _episode(tmp, slide, [BESIDE, ON], "on"),
        "beside": _episode(tmp, slide, [BESIDE], "beside"),
        "coarse": _episode(tmp, slide, [Box(x=0, y=0, w=WIDTH, h=HEIGHT)], "coarse"),
    }


@pytest.mark.parametrize("write", [_geojson, _mask], ids=["geojson", "label_mask"])
def test_a_crop_over_the_target_at_1_mpp_is_a_hit_and_one_beside_is_not(
    write, slide: Path, episodes: dict[str, Trajectory], tmp_path: Path
) -> None:
    write(tmp_path / "annotations")
    annotations = Annotations(_settings(tmp_path / "annotations"))
    on, beside = episodes["on"], episodes["beside"]
    assert [seen_mpp(on, r) for r in on.regions[1:]] == [1.0, 1.0]

    hit = item_navigation(on, annotations, NAV)
    assert hit is not None and hit.hit is True and hit.first_hit_step == 2
    assert hit.on_target == 0.5 and hit.hit_steps == [False, True]
    miss = item_navigation(beside, annotations, NAV)
    assert miss is not None and miss.hit is False and miss.first_hit_step is None and miss.on_target == 0.0
    # the target seen only from far away (the whole slide in 500 px: 16 µm/px) is no hit
    far = item_navigation(episodes["coarse"], annotations, NAV)
    assert far is not None and far.hit is False


def test_the_mask_is_read_at_a_low_level_and_its_downsample_can_be_given(slide: Path, tmp_path: Path) -> None:
    folder = tmp_path / "annotations"
    _mask(folder)
    grid = Annotations(_settings(folder)).target(slide, WIDTH, HEIGHT)
    # the coarsest level at least MASK_LEVEL_SIDE long (1/4 here), never level 0
    assert grid is not None and grid.shape == (HEIGHT // 4, WIDTH // 4)
    assert grid.fraction(TARGET) == 1.0 and grid.fraction(BESIDE) == 0.0
    # a mask at half the slide's geometry, said so: the same cells land on the same level-0 boxes
    half = tmp_path / "half"
    half.mkdir()
    values = np.zeros((HEIGHT // 2, WIDTH // 2), dtype=np.uint8)
    values[TARGET.y // 2 : TARGET.bottom // 2, TARGET.x // 2 : TARGET.right // 2] = 3
    tifffile.imwrite(half / "case_01_mask.tif", values)
    grid = Annotations(_settings(half, mask_downsample=2.0)).target(slide, WIDTH, HEIGHT)
    assert grid is not None and grid.fraction(TARGET) == 1.0 and grid.fraction(BESIDE) == 0.0


def test_a_slide_without_annotations_is_not_annotated_never_a_miss(
    episodes: dict[str, Trajectory], tmp_path: Path
) -> None:
    (tmp_path / "empty").mkdir()
    record = item_navigation(episodes["beside"], Annotations(_settings(tmp_path / "empty")), NAV)
    assert record is not None and record.hit is None and not record.annotated
    records = [
        ResultRecord(
            key=f"t/{n}",
            benchmark="t",
            run_index=0,
            seed=0,
            truth=1,
            status="answered",
            correct=correct,
            navigation=nav,
        )
        for n, (correct, nav) in enumerate(
            [
                (True, Navigation(crops=2, hit=True, first_hit_step=2, hit_steps=[False, True])),
                (False, Navigation(crops=1, hit=False, hit_steps=[False])),
                (True, record),  # not annotated: in neither the rate nor its accuracies
            ]
        )
    ]
    summary = summarize_navigation(records, replicates=50, seed=0)
    assert summary is not None and (summary.annotated, summary.not_annotated) == (2, 1)
    assert summary.hit_rate is not None and summary.hit_rate.point == 0.5
    assert (summary.accuracy_hit, summary.accuracy_no_hit) == (1.0, 0.0)
    assert summary.hit_rate_by_step == [0.0, 0.5]


def test_the_episode_records_coverage_and_revisits_on_the_slide(episodes: dict[str, Trajectory]) -> None:
    on = episodes["on"].navigation
    assert on is not None and on.crops == 2 and on.finest_mpp == on.median_mpp == 1.0
    assert on.first_fine_step == 1 and on.revisits == 0.0
    assert on.coverage is not None and 0.0 < on.coverage < 0.5  # two 2000 px boxes of a 8192 x 6144 slide
    coarse = episodes["coarse"].navigation
    assert coarse is not None and coarse.coverage == 0.0 and coarse.first_fine_step is None  # 16 µm/px


def test_revisits_count_area_already_shown_at_the_same_or_finer_scale() -> None:
    def region(box: Box, side: int) -> Region:
        return Region(call_index=1, requested=box, read=box, level=0, output_width=side, output_height=side,
                      image="x.jpg")  # fmt: skip

    fine = region(Box(x=0, y=0, w=100, h=100), 100)
    again = region(Box(x=50, y=0, w=100, h=100), 100)  # half of it shown before at the same scale
    coarse = region(Box(x=0, y=0, w=400, h=400), 100)  # 4 px per pixel: coarser than `fine`
    assert revisits([fine, again]) == pytest.approx(50 * 100 / 20000)
    assert revisits([coarse, fine]) == pytest.approx(0.0)
    assert revisits([fine, coarse]) == pytest.approx(100 * 100 / (10000 + 160000))  # seen finer before
