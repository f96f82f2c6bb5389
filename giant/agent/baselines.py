"""The baselines and the random-region ablation (paper_facts §4): the model never chooses a region.

- thumbnail: one call with a thumbnail of the whole slide, no guides, no system prompt.
- patch: `patch_count` random tissue patches (level 0, or read at `patch_mpp` microns per pixel),
  each asked alone and concurrently, the episode returning the per-patch answers
  (Trajectory.patch_answers) for eval to extract and vote over; or, with inference=joint, all of them
  numbered in one call and one answer (the patch-design study, arXiv 2606.12407).
- random_regions: T-1 random square tissue regions shown after the overview, then one answer call.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from giant.agent import instructions
from giant.agent.context import Context
from giant.agent.episode_state import EpisodeEnd, EpisodeState, RetryCounter, task_answer
from giant.agent.images import Rendered, render_region, render_thumbnail
from giant.agent.loop import image_part, overview
from giant.agent.patch_geometry import level0_side
from giant.core import Box
from giant.llm.types import AnswerAction, ImagePart, Part, TextPart
from giant.record.trajectory import PatchesPlaced, Region
from giant.wsi import SlideError
from giant.wsi.magnification import shown_mpp
from giant.wsi.slide import Slide
from giant.wsi.tissue import TissueMask, place_distinct, sample_boxes

PATCH_MAP_SIDE = 1000  # the trajectory page's thumbnail under the patch boxes (never sent)

# Each mode (giant/agent/modes/) calls its runner here, and this module imports no mode, not even for
# an annotation (no import circle, type-only imports counted): a runner's episode carries its mode's
# settings, typed where the mode calls it.
ModeEpisode = EpisodeState[Any]


@dataclass
class Asked:
    """Where an answer-only exchange began: its first call, to which the shown image belongs."""

    first_call: int = 0


async def ask_for_answer(ep: EpisodeState[Any], ctx: Context, counter: RetryCounter, asked: Asked) -> str:
    """Call until the model answers; the model cannot crop here, so anything else is a failure."""
    while True:
        call, turn = await ep.call(ctx.render(), must_answer=True, allow_crop=False)
        asked.first_call = asked.first_call or call.index
        if turn is None:
            counter.fail("retries_exhausted", f"call {call.index}: {call.error_kind} error ({call.error})")
            continue
        answer = next((s.action for s in turn.steps if isinstance(s.action, AnswerAction)), None)
        if answer is not None:
            counter.reset()
            return answer.text
        ctx.add_assistant(turn)
        corrective = instructions.answer_only_corrective(instructions.words_of(ep.cfg))
        call.feedback = corrective
        for step in turn.steps:
            ctx.add_user([TextPart(text=corrective)], in_reply_to=step.call_id)
        counter.fail(
            "retries_exhausted", f"call {call.index}: {turn.steps[0].action.type} instead of an answer"
        )


def _rng(ep: EpisodeState[Any]) -> np.random.Generator:
    """Seeded per (seed, item, run): the same item and run sample the same regions everywhere."""
    key = json.dumps([ep.seed, ep.item.key, ep.traj.run_index]).encode()
    return np.random.default_rng(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))


@functools.lru_cache(maxsize=8)
def _tissue_mask(path: str, mtime_ns: int) -> TissueMask:
    """Computing a mask takes seconds; the x5 runs and the several questions of one slide share it.
    `mtime_ns` is part of the key so that a rewritten file is segmented again."""
    with Slide.open(path) as slide:
        return TissueMask.from_slide(slide)


async def _sample(
    ep: EpisodeState[Any], n: int, min_side: int, max_side: int, min_tissue: float
) -> list[Box]:
    """Square tissue boxes; a slide too small for them is an item-level slide problem."""
    path = Path(ep.slide.path)
    mask = await asyncio.to_thread(_tissue_mask, str(path), path.stat().st_mtime_ns)
    try:
        return sample_boxes(mask, n, min_side, max_side, min_tissue, _rng(ep))
    except ValueError as exc:
        raise EpisodeEnd("slide_error", f"{ep.slide.path}: {exc}") from None


async def run_thumbnail(ep: ModeEpisode) -> None:
    cfg = ep.cfg
    encoded = await render_thumbnail(ep.slide, cfg.thumbnail_size, cfg.jpeg_quality)
    ep.traj.regions.append(
        Region(
            call_index=0,
            requested=ep.full_box,
            read=ep.full_box,
            level=-1,  # the slide's own thumbnail path, not one pyramid level
            output_width=encoded.width,
            output_height=encoded.height,
            image=ep.store.save(encoded),
            mpp=shown_mpp(ep.slide.mpp_x, ep.full_box, encoded.width, encoded.height),
        )
    )
    ctx = Context(system=None)
    ctx.add_user([TextPart(text=ep.item.prompt), ImagePart(image=encoded, label="thumbnail")])
    text = await ask_for_answer(ep, ctx, RetryCounter(cfg.max_retries), Asked())
    ep.steps += 1
    ep.answered(text, budget_forced=False)


async def run_patch(ep: ModeEpisode) -> None:
    """Place the patches, then ask them as the run says: each alone (vote) or all at once (joint)."""
    cfg = ep.cfg
    side = _patch_side(ep)
    if cfg.patch_placement == "distinct":
        boxes = await _place_distinct(ep, cfg.patch_count, side, cfg.region_min_tissue)
    else:
        boxes = await _sample(ep, cfg.patch_count, side, side, cfg.region_min_tissue)
    patches = [
        await render_region(ep.slide, box, cfg.patch_size, fill=cfg.fill, guides=0, quality=cfg.jpeg_quality)
        for box in boxes
    ]
    ep.traj.patches = PatchesPlaced(
        requested=cfg.patch_count,
        sent=len(patches),
        level0_side=side,
        placement=cfg.patch_placement,
        map=await _placement_map(ep),
    )
    if not patches:
        raise EpisodeEnd(
            "slide_error",
            f"{ep.slide.path}: no patch of {side} level-0 px with {cfg.region_min_tissue:.0%} tissue fits "
            f"apart from the others (agent.patch_size={cfg.patch_size}, agent.patch_mpp={cfg.patch_mpp}); "
            "lower agent.patch_mpp or agent.patch_size, or set agent.patch_placement=fill",
        )
    if cfg.inference == "joint":
        await _ask_jointly(ep, patches)
    else:
        await _vote(ep, patches)


def _patch_side(ep: ModeEpisode) -> int:
    """A patch's side in level-0 pixels on this slide (giant.agent.modes.patch.level0_side)."""
    try:
        return level0_side(ep.cfg.patch_size, ep.cfg.patch_mpp, ep.slide.mpp_x)
    except ValueError as exc:
        raise EpisodeEnd("slide_error", f"{ep.slide.path}: {exc}") from None


async def _place_distinct(ep: EpisodeState[Any], n: int, side: int, min_tissue: float) -> list[Box]:
    path = Path(ep.slide.path)
    mask = await asyncio.to_thread(_tissue_mask, str(path), path.stat().st_mtime_ns)
    return place_distinct(mask, n, side, min_tissue, _rng(ep))


async def _placement_map(ep: EpisodeState[Any]) -> Region | None:
    """The slide's thumbnail for the trajectory page, on which it draws the patch boxes; the model
    never sees it. A slide that cannot give one leaves the page without it, not the episode."""
    try:
        encoded = await render_thumbnail(ep.slide, PATCH_MAP_SIDE, ep.cfg.jpeg_quality)
    except (SlideError, ValueError):
        return None
    return Region(
        call_index=0,
        requested=ep.full_box,
        read=ep.full_box,
        level=-1,
        output_width=encoded.width,
        output_height=encoded.height,
        image=ep.store.save(encoded),
        mpp=shown_mpp(ep.slide.mpp_x, ep.full_box, encoded.width, encoded.height),
    )


async def _ask_jointly(ep: ModeEpisode, patches: list[Rendered]) -> None:
    """One call carrying every patch, numbered, after the question; one answer."""
    count = len(patches)
    parts: list[Part] = [
        TextPart(text=ep.item.prompt),
        TextPart(text=instructions.joint_patches_text(count, ep.cfg.patch_mpp)),
    ]
    for number, patch in enumerate(patches, start=1):
        parts += [
            TextPart(text=instructions.patch_label_text(number, count)),
            image_part(patch, f"patch {number} {patch.region.read}"),
        ]
    ctx = Context(system=None)
    ctx.add_user(parts)
    asked = Asked()
    try:
        text = await ask_for_answer(ep, ctx, RetryCounter(ep.cfg.max_retries), asked)
    finally:
        if asked.first_call:  # sent at least once: the patches are what that call showed
            for patch in patches:
                await ep.add_crop(asked.first_call, patch)
                ep.crops += 1
    ep.steps += 1
    ep.answered(text, budget_forced=False)


async def _vote(ep: ModeEpisode, patches: list[Rendered]) -> None:
    """Each patch asked alone and concurrently; eval votes over the answers."""
    cfg = ep.cfg

    async def ask(number: int, patch: Rendered) -> str | EpisodeEnd:
        ctx = Context(system=None)
        ctx.add_user(
            [TextPart(text=ep.item.prompt), image_part(patch, f"patch {number} {patch.region.read}")]
        )
        try:
            return await ask_for_answer(ep, ctx, RetryCounter(cfg.max_retries), asked[number - 1])
        except EpisodeEnd as end:
            return end

    asked = [Asked() for _ in patches]
    results = await asyncio.gather(*(ask(n, p) for n, p in enumerate(patches, start=1)))
    for patch, where in zip(patches, asked, strict=True):
        await ep.add_crop(where.first_call, patch)
        ep.crops += 1
    # A fatal error or a budget stop ends the item whatever the other patches answered.
    ending = ("provider_error", "context_exceeded", "budget_exceeded")
    fatal = next((r for r in results if isinstance(r, EpisodeEnd) and r.status in ending), None)
    if fatal is not None:
        raise fatal
    if all(isinstance(r, EpisodeEnd) for r in results):
        reasons = "; ".join(r.reason for r in results if isinstance(r, EpisodeEnd))
        raise EpisodeEnd("retries_exhausted", f"every patch call failed: {reasons}")
    ep.traj.patch_answers = [None if isinstance(r, EpisodeEnd) else task_answer(r) for r in results]
    ep.steps += sum(1 for r in results if not isinstance(r, EpisodeEnd))
    ep.answered(None, budget_forced=False)


async def run_random_regions(ep: ModeEpisode) -> None:
    cfg = ep.cfg
    n = cfg.max_steps - 1
    first = await overview(ep)
    ep.add_region(0, first)
    parts: list[Part] = [
        TextPart(text=ep.item.prompt),
        image_part(first, "overview"),
        TextPart(text=f"Overview of the whole slide ({ep.width} x {ep.height} level-0 pixels)."),
    ]
    if n > 0:
        bound = cfg.region_max_side or min(ep.width, ep.height)
        bound = min(bound, ep.width, ep.height)
        low = min(cfg.region_min_side, bound)
        boxes = await _sample(ep, n, low, bound, cfg.region_min_tissue)
        for number, box in enumerate(boxes, start=1):
            rendered = await render_region(
                ep.slide, box, cfg.crop_size, fill=cfg.fill, guides=cfg.guides, quality=cfg.jpeg_quality
            )
            region = await ep.add_crop(0, rendered)
            ep.crops += 1
            label = f"Region {number}"
            parts += [
                TextPart(
                    text=instructions.region_text(
                        label, region.read, box, ep.width, ep.height, region.level, region.clamped
                    )
                ),
                image_part(rendered, f"region {number} {region.read}"),
            ]
    system = instructions.random_regions_system_prompt(cfg, ep.width, ep.height, ep.crops)
    ep.traj.system_prompt = system
    ctx = Context(system, cfg.max_images_in_context)
    ctx.add_user(parts)
    text = await ask_for_answer(ep, ctx, RetryCounter(cfg.max_retries), Asked())
    ep.steps += 1
    ep.answered(text, budget_forced=False)
