"""A patch geometry no slide of the run can serve stops before any request, with one line naming the
settings (issue 39): `agent=patch agent.patch_size=512 agent.patch_mpp=2.0` needs 4,096 level-0 pixels
on slides of 0.25 µm/px. Real slides written by the test, opened with OpenSlide."""

from __future__ import annotations

from pathlib import Path

import pytest

from giant.agent.modes import parse_agent
from giant.errors import ConfigError
from giant.eval.geometry import check_geometry
from giant.wsi.synthetic import write_synthetic_slide


@pytest.fixture(scope="module")
def slides(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("geometry")
    return {
        "small": write_synthetic_slide(root / "small.svs", 3200, 2400, seed=0),  # the demo slides' size
        "large": write_synthetic_slide(root / "large.svs", 4800, 4400, seed=1),
        "coarse": write_synthetic_slide(root / "coarse.svs", 3200, 2400, seed=2, mpp=4.0),
    }


def _patch(**settings: object) -> object:
    return parse_agent({"mode": "patch", "patch_count": 3, **settings})


def test_patches_no_slide_can_serve_stop_with_one_line_naming_the_settings(slides: dict[str, Path]) -> None:
    with pytest.raises(ConfigError) as stop:
        check_geometry(_patch(patch_size=512, patch_mpp=2.0), [slides["small"]])  # type: ignore[arg-type]
    line = str(stop.value)
    assert "\n" not in line and line.startswith("agent.patch_size=512 agent.patch_mpp=2: no slide of the run")
    assert "small.svs: patches of 4096 level-0 px, the slide is 3200x2400" in line
    assert line.endswith("lower agent.patch_size or agent.patch_mpp")


def test_patches_a_slide_cannot_read_at_their_mpp_are_named_with_the_reason(slides: dict[str, Path]) -> None:
    with pytest.raises(ConfigError, match=r"coarse.svs: level 0 is 4 µm/px, coarser than agent.patch_mpp=2"):
        check_geometry(_patch(patch_size=224, patch_mpp=2.0), [slides["coarse"]])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("settings", "names"),
    [
        ({"patch_size": 512, "patch_mpp": 2.0}, ["small", "large"]),  # one slide serves: the run goes on
        ({"patch_size": 512, "patch_mpp": 1.0}, ["small"]),  # 2,048 px fit
        ({"patch_size": 224}, ["small", "coarse"]),  # level 0 (patch_mpp null)
    ],
)
def test_patches_one_slide_can_serve_run(
    slides: dict[str, Path], settings: dict[str, object], names: list[str]
) -> None:
    check_geometry(_patch(**settings), [slides[name] for name in names])  # type: ignore[arg-type]


def test_other_modes_are_not_checked(slides: dict[str, Path]) -> None:
    check_geometry(parse_agent({"mode": "giant", "crop_size": 4096}), [slides["small"]])
