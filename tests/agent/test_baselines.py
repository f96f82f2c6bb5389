"""Thumbnail, patch and random-region modes end to end on a real generated slide."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from giant.agent import instructions
from giant.agent.baselines import _tissue_mask
from giant.core import Item
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.llm.types import ImagePart
from giant.wsi.tissue import TissueMask

from .conftest import HEIGHT, WIDTH, Recording, answer, crop, error, run, scripted, texts


@pytest.fixture(scope="module")
def mask(slide_path: Path) -> TissueMask:
    """The agent's own cached mask: computing one takes seconds."""
    return _tissue_mask(str(slide_path), slide_path.stat().st_mtime_ns)


def random_provider(seed: int = 0) -> Recording:
    return Recording(build_provider(provider_settings("random", seed=seed)))


def test_thumbnail_one_call_no_guides_no_system(tmp_path: Path, item: Item, slide_path: Path) -> None:
    provider = random_provider()
    traj = run(item, slide_path, provider, tmp_path, mode="thumbnail", thumbnail_size=500)
    assert traj.status == "answered" and traj.answer is not None
    assert traj.totals.calls == 1 and traj.totals.crops == 0
    conversation, ctx = provider.sent[0]
    assert conversation.system is None and traj.system_prompt is None
    assert not ctx.allow_crop and ctx.must_answer
    [image] = [
        p for m in conversation.messages if m.role == "user" for p in m.parts if isinstance(p, ImagePart)
    ]
    assert max(image.image.width, image.image.height) == 500
    with Image.open(tmp_path / traj.regions[0].image) as saved:
        assert saved.size == (500, round(500 * HEIGHT / WIDTH))


def test_thumbnail_crop_reply_is_a_failure(tmp_path: Path, item: Item, slide_path: Path) -> None:
    provider = scripted(tmp_path, [crop(0, 0, 100, 100), error("transient"), answer(4)])
    traj = run(item, slide_path, provider, mode="thumbnail")
    assert traj.status == "answered" and traj.answer == '{"answer": 4}' and traj.totals.calls == 3
    assert traj.calls[0].feedback == instructions.ANSWER_ONLY_CORRECTIVE
    assert instructions.ANSWER_ONLY_CORRECTIVE in texts(provider.sent[1][0])
    assert [c.error_kind for c in traj.calls] == [None, "transient", None]


def test_patch_mode_random_provider(tmp_path: Path, item: Item, slide_path: Path, mask: TissueMask) -> None:
    provider = random_provider()
    traj = run(item, slide_path, provider, tmp_path, mode="patch", patch_count=6)
    assert traj.status == "answered"
    assert traj.totals.calls == 6 and traj.totals.crops == 6
    assert all(not ctx.allow_crop for _, ctx in provider.sent)
    assert all(conversation.system is None for conversation, _ in provider.sent)
    assert all(
        (r.read.w, r.read.h, r.output_width, r.output_height) == (224, 224, 224, 224) for r in traj.regions
    )
    assert all(mask.fraction(r.read) >= 0.25 for r in traj.regions)
    # the agent does not score: six answer texts for eval to read and vote, no answer of its own
    assert traj.answer is None and len(traj.patch_answers or []) == 6
    assert all('"answer": ' in text for text in traj.patch_answers or [])
    # seeded: the same seed samples the same patches, another seed others
    again = run(item, slide_path, random_provider(), mode="patch", patch_count=6)
    assert [r.read for r in again.regions] == [r.read for r in traj.regions]
    other = run(item, slide_path, random_provider(), mode="patch", patch_count=6, seed=1)
    assert [r.read for r in other.regions] != [r.read for r in traj.regions]


def test_patch_answers_in_patch_order(tmp_path: Path, item: Item, slide_path: Path) -> None:
    provider = scripted(tmp_path, [answer(1), error("transient"), answer(4), answer(4)])
    traj = run(item, slide_path, provider, mode="patch", patch_count=3)
    assert traj.status == "answered" and traj.totals.calls == 4
    assert traj.patch_answers == ['{"answer": 1}', '{"answer": 4}', '{"answer": 4}']
    provider = scripted(tmp_path, [answer(3), answer(2), answer(2), answer(3), error("fatal")])
    traj = run(item, slide_path, provider, mode="patch", patch_count=4)
    assert traj.status == "answered" and traj.patch_answers == [f'{{"answer": {n}}}' for n in (3, 2, 2, 3)]


def test_random_regions_random_provider(
    tmp_path: Path, item: Item, slide_path: Path, mask: TissueMask
) -> None:
    provider = random_provider()
    traj = run(item, slide_path, provider, tmp_path, mode="random_regions", max_steps=5, region_min_side=1000)
    assert traj.status == "answered"
    assert traj.totals.calls == 1 and traj.totals.crops == 4
    regions = traj.regions[1:]
    assert all(r.read.w == r.read.h and 1000 <= r.read.w <= HEIGHT for r in regions)
    assert all(mask.fraction(r.read) >= 0.25 for r in regions)
    conversation, ctx = provider.sent[0]
    assert not ctx.allow_crop
    images = [
        p for m in conversation.messages if m.role == "user" for p in m.parts if isinstance(p, ImagePart)
    ]
    assert len(images) == 5
    assert "4 regions chosen at random" in (conversation.system or "")


def test_patch_calls_run_concurrently(tmp_path: Path, item: Item, slide_path: Path) -> None:
    provider = scripted(tmp_path, [{**answer(2), "sleep": 0.2}] * 5)
    traj = run(item, slide_path, provider, mode="patch", patch_count=5)
    assert traj.status == "answered" and traj.totals.calls == 5
    assert provider.max_in_flight == 5


def test_patch_answers_for_a_grade_task_are_kept_as_said(
    tmp_path: Path, item: Item, slide_path: Path
) -> None:
    panda = item.model_copy(update={"benchmark": "panda", "options": (), "truth": 0})
    grade = {
        "reasoning": "grade",
        "action": {"type": "answer", "text": '<response>{"isup_grade": null}</response>'},
    }
    provider = scripted(tmp_path, [grade, answer(3), grade])  # a null is read by eval, with the run's rule
    traj = run(panda, slide_path, provider, mode="patch", patch_count=3)
    assert traj.patch_answers == ['{"isup_grade": null}', '{"answer": 3}', '{"isup_grade": null}']
