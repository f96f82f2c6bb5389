"""The caption tool: the navigating model (scripted) asks a captioner served behind an OpenAI-compatible
server (a loopback peer driven through the real openai SDK) to describe a region. The captioner's
calls go to the ledger (a rerun replays them, nothing sent), their cost joins the item's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from giant.core import Box, Item
from giant.tools.caption.settings import CaptionSettings
from giant.tools.caption.tool import CaptionRecord, CaptionTool
from tests.agent.conftest import answer, crop, run, scripted, texts
from tests.llm.mock_api import MockAPI, chat_body, step_json

ROOT = Path(__file__).resolve().parents[2]
CAPTION = "Sheets of pleomorphic cells with scattered mitoses; no glands."
PRICE = {"input": 1.0, "cached_input": 0.5, "cache_write": 1.0, "output": 4.0}  # USD per million tokens


def settings(tmp_path: Path, **changes: Any) -> CaptionSettings:
    """conf/tools/caption.yaml's values, its captioner priced by a pricing file of the test's own."""
    pricing = tmp_path / "pricing.yaml"
    pricing.write_text(yaml.safe_dump({"models": {"path-vlm": PRICE}}))
    values = yaml.safe_load((ROOT / "conf" / "tools" / "caption.yaml").read_text())
    values["options"] = {
        "model": "path-vlm",
        "base_url": "http://127.0.0.1:9/v1",  # never reached: the SDK's transport is the loopback peer
        "preflight": False,
        "pricing_file": str(pricing),
    }
    values |= {"ledger": True, "ledger_dir": str(tmp_path / "ledger")}
    return CaptionSettings.model_validate(values | changes)


def caption_step(x: int = 1000, y: int = 500, w: int = 1500, h: int = 1000) -> dict[str, Any]:
    return {"reasoning": "ask", "action": {"type": "caption", "x": x, "y": y, "width": w, "height": h}}


def reply(text: str = CAPTION) -> dict[str, Any]:
    return chat_body(step_json({"type": "answer", "text": text}, reasoning="describing"))


def episode(tmp_path: Path, item: Item, slide: Path, api: MockAPI, out: str, **changes: Any) -> Any:
    tool = CaptionTool.load(settings(tmp_path, **changes), http_client=api.client())
    provider = scripted(tmp_path, [crop(1000, 500, 3000, 1200), caption_step(), answer(2)])
    traj = run(
        item, slide, provider, tmp_path / out, max_steps=6, loaded={"caption": tool}, tools=["caption"]
    )
    return traj, provider


def test_the_captioner_describes_the_region_and_a_rerun_replays_it(
    tmp_path: Path, item: Item, slide_path: Path
) -> None:
    api = MockAPI(reply())
    traj, provider = episode(tmp_path, item, slide_path, api, "first")
    assert traj.status == "answered"
    [record] = traj.tool_calls
    assert isinstance(record, CaptionRecord)
    assert record.caption == CAPTION and record.model == "openai_compatible / path-vlm"
    assert record.region == Box(x=1000, y=500, w=1500, h=1000) and max(record.width, record.height) == 1024
    # one request, the region as an image and the settings' request; priced at the captioner's rates
    [sent] = api.requests
    parts = sent["messages"][-1]["content"]
    assert [part["type"] for part in parts] == ["image_url", "text"]
    assert "µm per pixel" in parts[1]["text"] and sent["model"] == "path-vlm"
    cost = (800 * PRICE["input"] + 100 * PRICE["cached_input"] + 50 * PRICE["output"]) / 1e6
    assert record.cost_usd == pytest.approx(cost) and not record.replayed
    assert (record.input_tokens, record.output_tokens) == (900, 50)
    # the model is told the description; the item's cost counts the captioner's
    assert CAPTION in texts(provider.sent[2][0])
    assert traj.totals.cost_usd == pytest.approx(cost)  # the scripted navigator costs nothing
    kept = list((tmp_path / "ledger" / "calls").rglob("*.json"))
    assert len(kept) == 1 and json.loads(kept[0].read_text())["model"] == "path-vlm"

    # the same run again: the caption comes from the ledger, nothing is sent or paid
    silent = MockAPI()  # any request would fail: no reply queued
    again, _ = episode(tmp_path, item, slide_path, silent, "second")
    [replayed] = again.tool_calls
    assert silent.requests == [] and replayed.replayed and replayed.caption == CAPTION
    assert replayed.cost_usd == 0.0 and again.totals.cost_usd == 0.0


def test_a_captioner_error_is_one_line_to_the_model(tmp_path: Path, item: Item, slide_path: Path) -> None:
    api = MockAPI(
        (400, {"error": {"message": "image too large\nsecond line", "type": "invalid_request"}}, {})
    )
    traj, provider = episode(tmp_path, item, slide_path, api, "out")
    assert traj.status == "answered" and traj.tool_calls == []
    feedback = traj.calls[1].feedback
    assert feedback is not None and "\n" not in feedback
    assert feedback.startswith("The captioner could not describe the region (fatal: ")
    assert feedback in texts(provider.sent[2][0])


def test_the_captioners_budget_per_item_stops_further_calls(
    tmp_path: Path, item: Item, slide_path: Path
) -> None:
    api = MockAPI(reply())
    tool = CaptionTool.load(settings(tmp_path, budget_usd=0.0001), http_client=api.client())
    provider = scripted(tmp_path, [caption_step(), caption_step(0, 0, 800, 800), answer(2)])
    traj = run(item, slide_path, provider, max_steps=6, loaded={"caption": tool}, tools=["caption"])
    assert len(traj.tool_calls) == 1 and len(api.requests) == 1  # the first call spent the cap
    assert traj.calls[1].feedback == (
        "Not executed: the captioner's budget for this item ($0.00) is spent. "
        "Crop, measure or answer instead."
    )


def test_a_captioner_in_batch_mode_is_one_config_error_line(tmp_path: Path) -> None:
    from giant.errors import ConfigError

    values = settings(tmp_path).model_dump() | {
        "provider": "openai",
        "options": {"model": "gpt-5-mini", "batch": True},
    }
    with pytest.raises(ConfigError, match=r"^tools\.caption\.options\.batch=true: the captioner cannot wait"):
        CaptionTool.load(CaptionSettings.model_validate(values))


def test_a_captioner_without_its_key_is_one_config_error_line(tmp_path: Path) -> None:
    from giant.errors import ConfigError

    values = settings(tmp_path).model_dump() | {"provider": "openai", "options": {"model": "gpt-5-mini"}}
    with pytest.raises(ConfigError, match=r"^tools\.caption: provider=openai: environment variable"):
        CaptionTool.load(CaptionSettings.model_validate(values))
