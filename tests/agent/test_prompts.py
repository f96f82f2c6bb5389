"""The system prompts against paper_facts §1 (paper-fidelity audit): what each prompt must state."""

from __future__ import annotations

from typing import Any

import pytest

from giant.agent import instructions
from giant.agent.modes import mode_of, parse_agent


def system_prompt(width: int, height: int, **settings: Any) -> str:
    """The system prompt a mode sends on a slide of this size."""
    cfg = parse_agent(settings)
    text = mode_of(cfg).system_prompt(cfg, width, height)
    assert text is not None
    return text


@pytest.mark.parametrize("mode", ["giant", "paper", "authors"])
def test_navigation_prompt_states_size_budget_and_coordinates(mode: str) -> None:
    text = system_prompt(98304, 75776, mode=mode, max_steps=20)
    assert "98304 x 75776" in text
    assert "budget of 20 steps" in text and "up to 19 steps" in text
    assert "step 20) is for your answer" in text
    assert "level-0 pixels" in text
    assert "<report>" in text and "<response>" in text


def test_one_image_in_context_keeps_only_the_overview() -> None:
    """N = 1 keeps the overview and no crop: the prompt must not speak of "the 0 most recent" crops."""
    text = system_prompt(1000, 1000, max_images_in_context=1)
    assert "0 most recent" not in text
    assert "only the overview image stays visible" in text


def test_random_regions_prompt_says_older_images_are_dropped() -> None:
    """The random-region ablation renders its context with max_images_in_context too, so its system
    prompt must say so, as the navigation prompt does."""
    cfg = parse_agent({"mode": "random_regions", "max_images_in_context": 3})
    text = instructions.random_regions_system_prompt(cfg, 6000, 4000, 4)
    assert "only the overview and up to 2 recent" in text
    assert "recent crop" not in system_prompt(6000, 4000, mode="random_regions")


def test_authors_prompt_asks_to_use_the_steps_and_not_rush() -> None:
    """Issue 9 case 5: the authors' prompt urges the model to spend its T steps and not hurry; authors
    mode must say so too, where it used to carry giant's invitation to answer early."""
    text = system_prompt(98304, 75776, mode="authors", max_steps=20)
    assert "as many of your 20 steps as you can" in text
    assert "do not rush" in text
    assert "Look closely at the tissue" in text
    assert "answer earlier" not in text


def test_giant_and_paper_prompts_keep_their_pacing() -> None:
    """Only authors mode changed: giant still allows a confident early answer, paper forbids one."""
    giant = system_prompt(6000, 4000, mode="giant", max_steps=20)
    paper = system_prompt(6000, 4000, mode="paper", max_steps=20)
    assert "answer earlier only when you are certain" in giant
    assert "You must crop exactly 19 regions before answering" in paper
    for text in (giant, paper):
        assert "do not rush" not in text


def test_authors_prompt_at_t1_has_nothing_to_pace() -> None:
    text = system_prompt(6000, 4000, mode="authors", max_steps=1)
    assert "budget of 1 step" in text and "as many of your" not in text
