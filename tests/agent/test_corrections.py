"""The correction rule (issue 9 case 3): the paper's "incorrect if the model exceeds the limit after 3
retries" as one rule for giant and paper modes. A violation (a crop once the answer is due; in paper
mode an answer before step T) gets a corrective message, 3 in all; the 4th violation fails the item,
so an episode makes at most T + 3 calls. Checked at T = 2 and at the published T = 20."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from giant.agent import instructions
from giant.core import Item
from giant.record.trajectory import Trajectory

from .conftest import answer, crop, error, run, scripted

T_VALUES = (2, 20)
S = 128  # the rule does not depend on S; small crops keep T = 20 fast


def _crops(n: int) -> list[dict[str, Any]]:
    return [crop(100 * i, 100 * i, 1000, 1000) for i in range(n)]


def _feedback(traj: Trajectory) -> list[str | None]:
    return [call.feedback for call in traj.calls]


@pytest.mark.parametrize("t", T_VALUES)
@pytest.mark.parametrize("mode", ["giant", "paper"])
def test_crops_past_the_limit_fail_after_three_corrections(
    tmp_path: Path, item: Item, slide_path: Path, mode: str, t: int
) -> None:
    provider = scripted(tmp_path, _crops(t - 1) + _crops(10))
    traj = run(item, slide_path, provider, mode=mode, max_steps=t, crop_size=S)
    assert traj.status == "step_limit_exceeded" and traj.answer is None
    assert len(provider.sent) == traj.totals.calls == t + 3
    assert traj.corrections == 3 and traj.totals.crops == t - 1
    assert _feedback(traj)[t - 1 :] == [instructions.STEP_LIMIT_CORRECTIVE] * 3 + [None]
    assert f"call {t + 3}: crop instead of the required answer after 3 corrective messages" in traj.reason


@pytest.mark.parametrize("t", T_VALUES)
def test_paper_early_answers_fail_after_three_corrections(
    tmp_path: Path, item: Item, slide_path: Path, t: int
) -> None:
    """Before: the rejected answers fed the consecutive-failure counter, so the item failed after 2
    corrective messages, as retries_exhausted."""
    provider = scripted(tmp_path, [answer()] * 6)
    traj = run(item, slide_path, provider, mode="paper", max_steps=t, crop_size=S)
    assert traj.status == "early_answer_rejected" and traj.answer is None
    assert len(provider.sent) == traj.totals.calls == 4
    assert traj.corrections == 3
    assert _feedback(traj) == [instructions.early_answer_corrective(0, t)] * 3 + [None]
    assert "call 4: early answer at step 1 after 3 corrective messages" in traj.reason


@pytest.mark.parametrize("t", T_VALUES)
def test_paper_early_answers_and_the_step_limit_share_the_three_corrections(
    tmp_path: Path, item: Item, slide_path: Path, t: int
) -> None:
    """One early answer and three crops at step T are four violations: T + 3 calls, then the item fails."""
    provider = scripted(tmp_path, [answer(), *_crops(t - 1), *_crops(5)])
    traj = run(item, slide_path, provider, mode="paper", max_steps=t, crop_size=S)
    assert traj.status == "step_limit_exceeded"
    assert len(provider.sent) == traj.totals.calls == t + 3
    assert traj.corrections == 3 and traj.totals.crops == t - 1
    feedback = _feedback(traj)
    assert feedback[0] == instructions.early_answer_corrective(0, t)
    assert feedback[t:] == [instructions.STEP_LIMIT_CORRECTIVE] * 2 + [None]


@pytest.mark.parametrize("t", T_VALUES)
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("mode", ["giant", "paper"])
def test_an_answer_after_k_step_limit_corrections_succeeds(
    tmp_path: Path, item: Item, slide_path: Path, mode: str, k: int, t: int
) -> None:
    provider = scripted(tmp_path, [*_crops(t - 1), *_crops(k), answer(3)])
    traj = run(item, slide_path, provider, mode=mode, max_steps=t, crop_size=S)
    assert traj.status == "answered" and traj.answer == '{"answer": 3}'
    assert len(provider.sent) == traj.totals.calls == t + k
    assert traj.corrections == k and traj.totals.crops == t - 1


@pytest.mark.parametrize("t", T_VALUES)
@pytest.mark.parametrize("k", [1, 2, 3])
def test_paper_answer_after_k_early_answer_corrections_succeeds(
    tmp_path: Path, item: Item, slide_path: Path, k: int, t: int
) -> None:
    provider = scripted(tmp_path, [*[answer(1)] * k, *_crops(t - 1), answer(3)])
    traj = run(item, slide_path, provider, mode="paper", max_steps=t, crop_size=S)
    assert traj.status == "answered" and traj.answer == '{"answer": 3}'
    assert len(provider.sent) == traj.totals.calls == t + k
    assert traj.corrections == k and traj.totals.crops == t - 1


def test_corrections_do_not_consume_the_failure_streak_in_giant_mode(
    tmp_path: Path, item: Item, slide_path: Path
) -> None:
    """Two transient errors, a crop at step T (corrected), two more: no 3 failures in a row. Before,
    the corrected crop left the streak running and the item failed at the third transient error."""
    lines = [crop(0, 0, 1000, 1000), error("transient"), error("transient"), crop(0, 0, 500, 500)]
    lines += [error("transient"), error("transient"), answer(4)]
    traj = run(item, slide_path, scripted(tmp_path, lines), max_steps=2, max_retries=3, crop_size=S)
    assert traj.status == "answered", traj.reason
    assert traj.totals.calls == 7 and traj.corrections == 1


def test_paper_early_answers_do_not_count_as_failures(tmp_path: Path, item: Item, slide_path: Path) -> None:
    """With max_retries=1 a single failure ends the item, yet an early answer is only corrected.
    Before, the rejected answer was a failure and ended the item as retries_exhausted."""
    provider = scripted(tmp_path, [answer(1), crop(0, 0, 1000, 1000), answer(2)])
    traj = run(item, slide_path, provider, mode="paper", max_steps=2, max_retries=1, crop_size=S)
    assert traj.status == "answered" and traj.answer == '{"answer": 2}'
    assert traj.totals.calls == 3 and traj.corrections == 1
    # and failures still end the item on their own count
    failing = scripted(tmp_path, [error("parse"), answer()])
    assert run(item, slide_path, failing, mode="paper", max_steps=2, max_retries=1).status == (
        "retries_exhausted"
    )


def test_max_corrections_is_the_one_setting(tmp_path: Path, item: Item, slide_path: Path) -> None:
    """agent.max_corrections=0 fails the first violation; max_retries plays no part in it."""
    traj = run(
        item, slide_path, scripted(tmp_path, [answer()] * 3), mode="paper", max_steps=3, max_corrections=0
    )
    assert traj.status == "early_answer_rejected" and traj.totals.calls == 1 and traj.corrections == 0
    five = run(
        item,
        slide_path,
        scripted(tmp_path, _crops(2) + _crops(8)),
        max_steps=3,
        max_corrections=5,
        max_retries=1,
        crop_size=S,
    )
    assert five.status == "step_limit_exceeded" and five.totals.calls == 3 + 5 and five.corrections == 5
