"""A patch geometry no slide of the run can serve, stopped before the first request.

`agent=patch agent.patch_size=512 agent.patch_mpp=2.0` on slides of 0.25 µm/px needs patches of
4,096 level-0 pixels; on slides of 3,200 pixels every item-run would end a slide error, paid for
nothing (its overview is never sent, but the run, its MLflow record and its summary would be). One
slide that can serve the patches is enough to run: the others end as slide errors, unmeasured.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from giant.agent.modes import AgentConfig
from giant.agent.modes.patch import PatchConfig
from giant.agent.patch_geometry import level0_side
from giant.errors import ConfigError
from giant.wsi import SlideError
from giant.wsi.slide import Slide


def check_geometry(agent: AgentConfig, slides: Iterable[Path]) -> None:
    """ConfigError (one line naming the settings) when no slide of `slides` can serve the patches of
    a patch run; nothing for other modes. Slides are opened until one serves (the first, mostly)."""
    if not isinstance(agent, PatchConfig):
        return
    example = ""
    for path in sorted(set(slides)):
        try:
            with Slide.open(path) as slide:
                width, height, mpp = slide.width, slide.height, slide.mpp_x
        except SlideError:
            continue  # an unreadable slide is the run's slide error, not the geometry's
        try:
            side = level0_side(agent.patch_size, agent.patch_mpp, mpp)
        except ValueError as exc:
            example = example or f"{path.name}: {exc}"
            continue
        if side <= min(width, height):
            return
        example = example or f"{path.name}: patches of {side} level-0 px, the slide is {width}x{height}"
    if not example:
        return  # no slide could be opened: the slide check reports that
    at = "" if agent.patch_mpp is None else f" agent.patch_mpp={agent.patch_mpp:g}"
    raise ConfigError(
        f"agent.patch_size={agent.patch_size}{at}: no slide of the run can serve these patches (e.g. "
        f"{example}); lower agent.patch_size or agent.patch_mpp"
    )
