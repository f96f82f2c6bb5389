"""The open model families' image-token rules and the dry run's context fit table (issue 20)."""

from __future__ import annotations

import pytest

from giant.agent.modes import parse_agent
from giant.eval.context_fit import context_fit, fit_rows, image_rule
from giant.llm.config import provider_settings
from giant.llm.image_tokens import (
    FAMILIES,
    family_of,
    gemma3,
    internvl,
    llama4,
    openai_high_detail,
    qwen2_vl,
    qwen3_vl,
)
from tests.eval.runner_fixtures import SLIDES, make_items


@pytest.mark.parametrize(
    ("rule", "side", "tokens"),
    [
        (qwen2_vl, 1000, 36 * 36 + 2),  # 1000 / 28 rounds to 36 blocks a side
        (qwen2_vl, 100, 4 * 4 + 2),
        (qwen2_vl, 20, 2 * 2 + 2),  # raised to min_pixels (4 tokens)
        (qwen2_vl, 4000, 16384 + 2),  # 143 x 143 would pass max_pixels: scaled to 128 x 128
        (qwen3_vl, 1000, 31 * 31 + 2),  # 32 px blocks
        (internvl, 1000, 256 * (9 + 1) + 2),  # 3 x 3 tiles of 448 plus the thumbnail
        (internvl, 448, 256 + 2),  # one tile, no thumbnail
        (gemma3, 1000, 256 + 2),
        (gemma3, 256, 256 + 2),
        (llama4, 1000, 144 * (9 + 1)),  # 3 x 3 tiles of 336 plus the global tile
        (llama4, 300, 144),  # one tile, no global tile
    ],
)
def test_image_token_rules(rule: object, side: int, tokens: int) -> None:
    assert rule(side, side) == tokens  # type: ignore[operator]


def test_the_family_follows_the_model_name_unless_set() -> None:
    assert family_of("Qwen/Qwen2.5-VL-7B-Instruct") == "qwen2_vl"
    assert family_of("Qwen/Qwen3-VL-8B-Instruct") == "qwen3_vl"
    assert family_of("OpenGVLab/InternVL3-8B") == "internvl"
    assert family_of("google/medgemma-4b-it") == family_of("gemma3:12b") == "gemma3"
    assert family_of("meta-llama/Llama-4-Scout-17B-16E-Instruct") == "llama4"
    assert family_of("my-finetune") == "openai_high_detail"
    assert family_of("Qwen/Qwen2.5-VL-7B-Instruct", "internvl") == "internvl"
    cfg = provider_settings("openai_compatible", model="OpenGVLab/InternVL3-8B", base_url="http://x/v1")
    assert image_rule(cfg, openai_high_detail, "openai_high_detail") == ("internvl", FAMILIES["internvl"])
    hosted = provider_settings("openai", model="gpt-5")
    assert image_rule(hosted, openai_high_detail, "openai_high_detail")[0] == "openai_high_detail"


def test_fit_rows_for_a_32k_qwen_at_s_1000() -> None:
    rows = fit_rows(
        max_model_len=32768, rule=qwen2_vl, crop_size=1000, cap=None, text_tokens=1000, reply_tokens=400
    )
    # text + T images x 1298 + (T-1) x (400 answer + 120 crop text) + 400 reply
    assert [(r.steps, r.images, r.tokens, r.fits) for r in rows] == [
        (5, 5, 1000 + 5 * 1298 + 4 * 520 + 400, True),
        (10, 10, 1000 + 10 * 1298 + 9 * 520 + 400, True),
        (20, 20, 1000 + 20 * 1298 + 19 * 520 + 400, False),
    ]
    t20 = rows[2]
    assert t20.max_images_in_context == 16  # 16 x 1298 = 20768 <= 32768 - 11280
    assert t20.crop_size == 904  # 32 x 32 blocks + 2 = 1026 tokens; 936 px would be 1091
    capped = fit_rows(
        max_model_len=32768, rule=qwen2_vl, crop_size=1000, cap=16, text_tokens=1000, reply_tokens=400
    )
    assert capped[2].fits and capped[2].images == 16
    gemma = fit_rows(
        max_model_len=8192, rule=gemma3, crop_size=1000, cap=None, text_tokens=0, reply_tokens=400
    )
    assert not gemma[2].fits and gemma[2].crop_size is None  # a fixed 256 per image: S does not help


def test_the_dry_run_table_reads_max_model_len_from_the_setting() -> None:
    agent = parse_agent({"mode": "giant", "max_steps": 20, "crop_size": 1000})
    cfg = provider_settings(
        "openai_compatible", model="Qwen/Qwen2.5-VL-7B-Instruct", base_url="http://x/v1", max_model_len=32768
    )
    fit = context_fit(make_items(2, SLIDES), agent, cfg)
    assert fit is not None and fit.family == "qwen2_vl" and fit.tokens_per_image == 1298
    lines = fit.render()
    assert lines[0].startswith("context fit for Qwen/Qwen2.5-VL-7B-Instruct (max_model_len 32,768")
    assert [line.split()[:4] for line in lines[2:]] == [
        ["5", "5", f"{fit.rows[0].tokens:,}", "yes"],
        ["10", "10", f"{fit.rows[1].tokens:,}", "yes"],
        ["20", "20", f"{fit.rows[2].tokens:,}", "NO"],
    ]
    assert "agent.max_images_in_context=" in lines[4] and "agent.crop_size=" in lines[4]
    assert context_fit([], agent, provider_settings("openai", model="gpt-5")) is None


def test_without_a_server_the_table_says_what_to_set() -> None:
    agent = parse_agent({"mode": "giant", "max_steps": 5, "crop_size": 1000})
    cfg = provider_settings("openai_compatible", model="m", base_url="http://127.0.0.1:9/v1")
    fit = context_fit([], agent, cfg)
    assert fit is not None and fit.max_model_len is None and fit.rows == []
    assert fit.render()[0].startswith("context fit: max_model_len unknown (the server did not say")
    assert fit.render()[0].endswith("set provider.max_model_len")
