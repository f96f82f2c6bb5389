"""The conch action inside the navigation loop, with a deterministic scorer (real cosines of real
vectors) on a real generated slide and the scripted provider."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest
from PIL import ImageChops

from giant.agent import instructions
from giant.core import Box, Item
from giant.llm.schema import function_tools, offered_actions, offered_tools, step_schema
from giant.record.trajectory import Trajectory
from giant.tools.conch.settings import HYPOTHESES_CAP
from giant.tools.conch.tool import ConchTool, central_square, conch_failed, conch_prompt, conch_too_many
from giant.wsi.slide import Slide
from tests.agent.conftest import answer, crop, run, scripted, texts

from .conftest import HEIGHT, WIDTH
from .scorers import HistogramScorer

HYPOTHESES = ["dense tumour nests", "pale stroma with few cells", "fat and empty space"]


def conch(*hypotheses: str) -> dict[str, Any]:
    return {"reasoning": "ask CONCH", "action": {"type": "conch", "hypotheses": list(hypotheses)}}


def ranked_lines(text: str) -> list[tuple[float, str]]:
    """The (score, hypothesis) lines of a conch reply, in the order the model read them."""
    return [(float(s), h) for s, h in re.findall(r"^\d+\. ([+-]\d\.\d{3})  (.+)$", text, flags=re.M)]


def test_conch_scores_the_latest_crop_read_again_from_the_slide(
    tmp_path: Path, item: Item, slide_path: Path
) -> None:
    scorer = HistogramScorer(input_size=96)
    provider = scripted(tmp_path, [crop(1000, 500, 3000, 1200), conch(*HYPOTHESES), answer(2)])
    traj = run(
        item,
        slide_path,
        provider,
        tmp_path / "out",
        max_steps=6,
        loaded={"conch": ConchTool(scorer, 4)},
        tools=["conch"],
    )
    assert traj.status == "answered"
    assert (traj.totals.calls, traj.totals.steps, traj.totals.crops) == (3, 3, 1)  # the conch call is a step
    [call] = traj.tool_calls
    square = Box(x=1900, y=500, w=1200, h=1200)  # the central square of the crop
    assert (call.call_index, call.tool, call.image, call.region) == (2, "conch", "crop 1", square)
    assert call.hypotheses == HYPOTHESES and call.input_size == 96
    # the scorer got the slide's own pixels at its input size, not the JPEG the model saw
    with Slide.open(slide_path) as slide:
        direct = slide.read_region(square, 96).image
    [seen] = scorer.images
    assert seen.size == (96, 96)
    assert ImageChops.difference(seen, direct).getbbox() is None
    assert call.scores == HistogramScorer().score(direct, HYPOTHESES)
    assert len(set(call.scores)) == 3  # real, distinct similarities
    # the reply lists every hypothesis with its score, highest first, then the steps left
    told = texts(provider.sent[2][0])
    expected = sorted(zip(call.scores, HYPOTHESES, strict=True), reverse=True)
    assert ranked_lines(told) == [(round(s, 3), h) for s, h in expected]
    assert f"central square {square} of crop 1" in told
    assert "You have 5 steps left" in told and "You have 4 steps left" in told
    saved = Trajectory.model_validate_json((tmp_path / "out" / "trajectory.json").read_text())
    assert saved.tool_calls == traj.tool_calls


def test_before_any_crop_conch_scores_the_overview(tmp_path: Path, item: Item, slide_path: Path) -> None:
    scorer = HistogramScorer()
    provider = scripted(tmp_path, [conch("tissue"), answer(1)])
    traj = run(
        item, slide_path, provider, max_steps=4, loaded={"conch": ConchTool(scorer, 2)}, tools=["conch"]
    )
    [call] = traj.tool_calls
    assert call.image == "the overview"
    assert call.region == central_square(Box(x=0, y=0, w=WIDTH, h=HEIGHT)) == Box(x=1000, y=0, w=4000, h=4000)


def test_the_prompt_schema_and_tools_offer_conch(tmp_path: Path, item: Item, slide_path: Path) -> None:
    provider = scripted(tmp_path, [answer(1)])
    run(
        item,
        slide_path,
        provider,
        max_steps=4,
        loaded={"conch": ConchTool(HistogramScorer(), 5)},
        tools=["conch"],
    )
    conversation, ctx = provider.sent[0]
    assert ctx.extra_actions == ("conch",)
    assert conversation.system is not None
    assert conch_prompt(5) in conversation.system and "1 to 5 short descriptions" in conversation.system
    schema = step_schema(offered_actions(ctx))
    action = schema["properties"]["action"]["properties"]
    assert "conch" in action["type"]["enum"]
    assert action["hypotheses"]["minItems"] == 1 and action["hypotheses"]["maxItems"] == HYPOTHESES_CAP
    assert action["hypotheses"]["items"]["minLength"] == 1
    assert function_tools()["conch"] in offered_tools(ctx)
    # without the setting nothing about CONCH reaches the model
    (tmp_path / "plain").mkdir()
    plain = scripted(tmp_path / "plain", [answer(1)])
    run(item, slide_path, plain, max_steps=4)
    assert plain.sent[0][1].extra_actions == () and "CONCH" not in (plain.sent[0][0].system or "")


def test_too_many_hypotheses_are_fed_back_and_not_counted(
    tmp_path: Path, item: Item, slide_path: Path
) -> None:
    scorer = HistogramScorer()
    provider = scripted(tmp_path, [conch("a", "b", "c"), conch("a", "b"), answer(1)])
    traj = run(
        item, slide_path, provider, max_steps=5, loaded={"conch": ConchTool(scorer, 2)}, tools=["conch"]
    )
    assert traj.calls[0].feedback == conch_too_many(3, 2)
    assert [c.hypotheses for c in traj.tool_calls] == [["a", "b"]]
    assert traj.totals.steps == 2  # the second conch call and the answer
    assert len(scorer.images) == 1


def test_conch_at_the_last_step_is_a_violation(tmp_path: Path, item: Item, slide_path: Path) -> None:
    provider = scripted(tmp_path, [crop(0, 0, 900, 900), conch("x"), answer(1)])
    traj = run(
        item,
        slide_path,
        provider,
        max_steps=2,
        loaded={"conch": ConchTool(HistogramScorer(), 2)},
        tools=["conch"],
    )
    assert traj.status == "answered" and traj.tool_calls == []
    assert traj.calls[1].feedback == instructions.STEP_LIMIT_CORRECTIVE


def test_a_failing_scorer_costs_the_call_not_the_episode(
    tmp_path: Path, item: Item, slide_path: Path
) -> None:
    class Broken(HistogramScorer):
        def score(self, image: Any, hypotheses: Any) -> list[float]:
            raise RuntimeError("out of memory")

    provider = scripted(tmp_path, [conch("x"), answer(1)])
    traj = run(
        item, slide_path, provider, max_steps=4, loaded={"conch": ConchTool(Broken(), 2)}, tools=["conch"]
    )
    assert traj.status == "answered"
    assert traj.calls[0].feedback == conch_failed("RuntimeError: out of memory")


def test_tools_without_a_loaded_model_is_one_clear_error(
    item: Item, slide_path: Path, tmp_path: Path
) -> None:
    from giant.errors import ConfigError
    from giant.tools import load_tools

    with pytest.raises(ConfigError, match="not loaded"):  # no tools handed to the episode
        run(item, slide_path, scripted(tmp_path, [answer(1)]), max_steps=3, tools=["conch"])
    with pytest.raises(ConfigError, match="no tools section"):
        load_tools(["conch"], None)


def _conch_episode(tmp_path: Path, item: Item, slide_path: Path) -> tuple[Path, Trajectory]:
    out = tmp_path / "out"
    hypotheses = [*HYPOTHESES, "<script>alert(1)</script> glands"]
    provider = scripted(tmp_path, [crop(2000, 1000, 1500, 1500), conch(*hypotheses), answer(2)])
    traj = run(
        item,
        slide_path,
        provider,
        out,
        max_steps=5,
        loaded={"conch": ConchTool(HistogramScorer(), 4)},
        tools=["conch"],
    )
    return out, traj


def test_the_viewer_page_lists_each_conch_call_highest_first(
    tmp_path: Path, item: Item, slide_path: Path
) -> None:
    from giant.tracking.viewer import write_html

    out, traj = _conch_episode(tmp_path, item, slide_path)
    page = write_html(out, traj).read_text()
    [call] = traj.tool_calls
    rows = re.findall(r"<tr><td>([+-]\d\.\d{3})</td><td>(.*?)</td></tr>", page)
    ranked = sorted(zip(call.scores, call.hypotheses, strict=True), reverse=True)
    assert rows == [(f"{s:+.3f}", html.escape(h, quote=True)) for s, h in ranked]
    assert "<script>alert" not in page  # model text is escaped
    assert f"central square {call.region} of crop 1" in page and "histogram test scorer" in page
