"""The cells tool: nuclei counted and measured on slides the tests draw with a known number and size of
hematoxylin-coloured discs (tests/tools/cells_tiles.py), read through real OpenSlide, and the tool inside
the navigation loop with the scripted provider (its record, its overlay, its page)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageChops

from giant.core import Box, Item
from giant.llm.schema import offered_actions, step_schema
from giant.record.trajectory import Trajectory
from giant.tools import Seen, ToolContext, UnusableCall
from giant.tools.cells.tool import CellsAction, CellsRecord, CellsTool, cells_prompt
from giant.wsi.slide import Slide
from tests.agent.conftest import answer, crop, run, scripted, texts

from .cells_tiles import Tile, nuclei_tile, settings


def measure(path: Path, box: Box | None = None, keep: Any = None, **changes: Any) -> CellsRecord:
    """One cells call on `box` (the whole slide when None), with conf/tools/cells.yaml's settings."""
    tool = CellsTool.load(settings(**changes))
    with Slide.open(path) as slide:
        box = box or Box(x=0, y=0, w=slide.width, h=slide.height)
        action = CellsAction(x=box.x, y=box.y, width=box.w, height=box.h)
        seen = Seen(1, "the overview", Box(x=0, y=0, w=slide.width, h=slide.height))
        return asyncio.run(tool.run(ToolContext(slide, "white", keep), seen, action))


@pytest.fixture(scope="module")
def tiles(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Tile]]:
    folder = tmp_path_factory.mktemp("cells")
    yield {
        "fine": nuclei_tile(folder / "fine.svs", 0.25, seed=1),  # ~40x
        "medium": nuclei_tile(folder / "medium.svs", 0.5, seed=2),  # ~20x
        "pairs": nuclei_tile(folder / "pairs.svs", 0.5, seed=3, pairs=True),
        "empty": nuclei_tile(folder / "empty.svs", 0.5, grid=0),
        "coarse": nuclei_tile(folder / "coarse.svs", 2.0, grid=4, size_um=1024),  # ~5x
    }


@pytest.mark.parametrize(
    ("tile", "mpp", "level"),
    [("fine", 0.5, 0), ("fine", 0.25, 0), ("medium", 0.5, 0), ("medium", 1.0, 0)],
)
def test_the_count_and_mean_area_match_the_drawn_nuclei(
    tiles: dict[str, Tile], tile: str, mpp: float, level: int
) -> None:
    truth = tiles[tile]
    record = measure(truth.path, mpp=mpp)
    assert record.mpp == pytest.approx(mpp, rel=0.01) and record.level == level
    assert abs(record.count - truth.count) <= 0.05 * truth.count, (record.count, truth.count)
    assert record.mean_area_um2 == pytest.approx(truth.mean_area_um2, rel=0.10)
    assert record.sd_area_um2 > 0  # radii were drawn from 3.5 to 5 µm
    assert record.tissue_fraction == pytest.approx(1.0, abs=0.01)  # pink everywhere
    # density per mm² of tissue: the count over the tile's area
    area_mm2 = (record.width * record.mpp) * (record.height * record.mpp) / 1e6
    assert record.density_per_mm2 == pytest.approx(record.count / area_mm2, rel=0.02)
    assert 0 <= record.irregularity < 0.08  # discs are convex


def test_the_watershed_splits_touching_nuclei(tiles: dict[str, Tile]) -> None:
    truth = tiles["pairs"]
    record = measure(truth.path)
    assert abs(record.count - truth.count) <= 0.05 * truth.count, (record.count, truth.count)


def test_a_region_without_nuclei_counts_none(tiles: dict[str, Tile]) -> None:
    record = measure(tiles["empty"].path)
    assert (record.count, record.density_per_mm2, record.mean_area_um2) == (0, 0.0, 0.0)
    assert record.tissue_fraction == pytest.approx(1.0, abs=0.01)


def test_glass_is_not_tissue(tmp_path: Path) -> None:
    from .cells_tiles import write_svs

    white = Image.new("RGB", (512, 512), (245, 245, 245))
    path = write_svs(tmp_path / "glass.svs", __import__("numpy").asarray(white), 0.5)
    record = measure(path)
    assert (record.count, record.tissue_fraction, record.density_per_mm2) == (0, 0.0, 0.0)
    assert CellsRecord.model_validate_json(record.model_dump_json()) == record  # every number is finite


def test_a_region_coarser_than_the_limit_is_refused_with_one_line(tiles: dict[str, Tile]) -> None:
    # a slide whose finest level is 2 µm/px
    with pytest.raises(UnusableCall) as info:
        measure(tiles["coarse"].path)
    assert info.value.feedback == (
        "Not executed: this slide's finest level is 2.00 µm/px, coarser than the 1 µm/px nuclei need; "
        "cells cannot count here. Crop or answer instead."
    )
    # a region too large for max_side pixels at max_mpp
    with pytest.raises(UnusableCall) as info:
        measure(tiles["medium"].path, max_side=256)
    assert "\n" not in info.value.feedback
    assert info.value.feedback == (
        "Not executed: the region (x=0, y=0, w=1024, h=1024) would be read at 2.00 µm/px, coarser than "
        "the 1 µm/px nuclei need; ask cells for a region at most 512 level-0 px on its longer side."
    )
    # the same region at max_side pixels within the limit is measured, coarser than asked for
    assert measure(tiles["medium"].path, max_side=512).mpp == pytest.approx(1.0)


def test_a_slide_without_microns_per_pixel_is_refused(tmp_path: Path) -> None:
    import numpy as np
    import tifffile

    path = tmp_path / "plain.tiff"  # a generic TIFF: OpenSlide reads no µm/px from it
    tifffile.imwrite(path, np.full((512, 512, 3), 200, np.uint8), tile=(256, 256), photometric="rgb")
    with pytest.raises(UnusableCall, match="does not record its µm per pixel"):
        measure(path)


def test_the_settings_refuse_a_read_coarser_than_their_own_limit() -> None:
    with pytest.raises(ValueError, match=r"mpp=2\.0 is coarser than max_mpp=1\.0"):
        settings(mpp=2.0)
    with pytest.raises(ValueError, match="three rows of three"):
        settings(stains=[[1, 0, 0]])


def test_cells_in_the_loop_records_its_numbers_and_overlay(
    tmp_path: Path, item: Item, slide_path: Path
) -> None:
    from giant.tracking.viewer import write_html

    box = {"type": "cells", "x": 1000, "y": 500, "width": 1000, "height": 800}
    provider = scripted(
        tmp_path, [crop(1000, 500, 3000, 1200), {"reasoning": "count", "action": box}, answer(2)]
    )
    out = tmp_path / "out"
    tool = CellsTool.load(settings())
    traj = run(item, slide_path, provider, out, max_steps=6, loaded={"cells": tool}, tools=["cells"])
    assert traj.status == "answered"
    # offered: the schema's action enum, and the prompt's paragraph
    conversation, ctx = provider.sent[0]
    assert "cells" in step_schema(offered_actions(ctx))["properties"]["action"]["properties"]["type"]["enum"]
    assert cells_prompt(tool.cfg) in (conversation.system or "")
    [record] = traj.tool_calls
    assert isinstance(record, CellsRecord)
    assert record.region == Box(x=1000, y=500, w=1000, h=800) and record.call_index == 2
    assert record.count > 0 and record.mpp == pytest.approx(0.5, rel=0.01)  # the slide is 0.25 µm/px
    told = texts(provider.sent[2][0])
    assert f"{record.count} nuclei" in told and "µm²" in told
    # the overlay is a JPEG beside the trajectory: the region measured (under 768 px: not resized),
    # the detections outlined in green
    assert record.overlay is not None and (record.width, record.height) == (500, 400)
    with Image.open(out / record.overlay) as overlay:
        assert overlay.size == (500, 400)
        red, green, _ = overlay.convert("RGB").split()
        outlined = ImageChops.multiply(
            green.point(lambda v: 255 * (v > 200)), red.point(lambda v: 255 * (v < 80))
        )
        assert outlined.getbbox() is not None  # pure green only where an outline was drawn
    assert Trajectory.model_validate_json((out / "trajectory.json").read_text()).tool_calls == [record]
    page = write_html(out, traj).read_text()
    assert f'<img class="overlay" src="{record.overlay}"' in page
    assert f"<td>{record.count}</td>" in page


def test_a_tool_that_crashes_is_one_line_to_the_model_and_the_run_goes_on(
    tmp_path: Path, item: Item, slide_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any) -> None:
        raise RuntimeError("division by zero\nin a traceback line")

    monkeypatch.setattr("giant.tools.cells.tool.detect", broken)
    step = {"reasoning": "count", "action": {"type": "cells", "x": 0, "y": 0, "width": 500, "height": 500}}
    provider = scripted(tmp_path, [step, answer(2)])
    tool = CellsTool.load(settings())
    traj = run(item, slide_path, provider, max_steps=6, loaded={"cells": tool}, tools=["cells"])
    assert traj.status == "answered" and traj.tool_calls == []
    line = "cells could not measure the region (RuntimeError: division by zero). Crop or answer instead."
    assert line in texts(provider.sent[1][0])
    assert traj.calls[0].feedback == line  # the cause, recorded with the call


def test_an_unexpected_tool_error_is_one_line_too(
    tmp_path: Path, item: Item, slide_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*args: Any) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(CellsTool, "run", broken)
    step = {"reasoning": "count", "action": {"type": "cells", "x": 0, "y": 0, "width": 500, "height": 500}}
    provider = scripted(tmp_path, [step, answer(2)])
    traj = run(
        item, slide_path, provider, max_steps=6, loaded={"cells": CellsTool.load(settings())}, tools=["cells"]
    )
    assert traj.status == "answered"
    line = "Not executed: the cells tool failed (KeyError: 'boom'). Crop or answer instead."
    assert traj.calls[0].feedback == line


def test_a_run_without_cells_is_not_offered_it(tmp_path: Path, item: Item, slide_path: Path) -> None:
    step = {"reasoning": "count", "action": {"type": "cells", "x": 0, "y": 0, "width": 500, "height": 500}}
    provider = scripted(tmp_path, [step, answer(2)])
    traj = run(item, slide_path, provider, max_steps=6)
    assert traj.status == "answered" and traj.tool_calls == []
    _, ctx = provider.sent[0]
    enum = step_schema(offered_actions(ctx))["properties"]["action"]["properties"]["type"]["enum"]
    assert enum == ["crop", "answer"]
    assert "'cells' is not available" in texts(provider.sent[1][0])


def test_a_large_region_keeps_an_overlay_no_longer_than_the_setting(tiles: dict[str, Tile]) -> None:
    kept: list[Any] = []

    def keep(image: Any) -> str:
        kept.append(image)
        return f"{image.sha256}.jpg"

    record = measure(tiles["fine"].path, keep=keep, mpp=0.25)  # 2048 px read
    [image] = kept
    assert (record.width, record.height) == (2048, 2048) and (image.width, image.height) == (768, 768)
    assert record.overlay == f"{image.sha256}.jpg"
    assert measure(tiles["fine"].path, keep=keep, overlay_side=0).overlay is None and len(kept) == 1
