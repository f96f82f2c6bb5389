"""A second tool touches only its own registration: a test-only `measure` tool (the latest image's
region size in pixels), registered here, is offered, run, recorded and shown like CONCH."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Literal, Self

import pytest
from pydantic import BaseModel

from giant.actions import ActionModel, NonEmptyStr
from giant.core import Box, Item
from giant.llm.schema import offered_actions, offered_tools, step_from_data, step_schema
from giant.record.trajectory import Trajectory
from giant.registry import register, unregister
from giant.roles import Method
from giant.tools import Seen, Tool, ToolContext, ToolRecord
from tests.agent.conftest import answer, crop, run, scripted, texts
from tests.llm.conftest import make_ctx


class MeasureSettings(BaseModel):
    unit: Method[str]


class MeasureAction(ActionModel):
    type: Literal["measure"] = "measure"


class MeasureRecord(ToolRecord):
    image: str
    region: Box
    pixels: int


class MeasureTool(Tool[MeasureSettings, MeasureAction, MeasureRecord]):
    name = "measure"
    settings = MeasureSettings
    action = MeasureAction
    record = MeasureRecord
    description = "Measure the latest image's region."
    hints: ClassVar[dict[str, str]] = {}
    report_title = "Measurements"
    report_note = "the latest image's region, in level-0 pixels."

    @classmethod
    def load(cls, settings: MeasureSettings) -> Self:
        return cls()

    def prompt(self) -> str:
        return "You can also measure your latest image: the measure action returns its size in pixels."

    async def run(self, ctx: ToolContext, seen: Seen, action: MeasureAction) -> MeasureRecord:
        pixels = seen.box.w * seen.box.h
        return MeasureRecord(
            call_index=seen.call_index, tool=self.name, image=seen.image, region=seen.box, pixels=pixels
        )

    def reply(self, record: MeasureRecord) -> str:
        return f"{record.image} covers {record.pixels} level-0 pixels."

    @classmethod
    def show(cls, action: MeasureAction) -> list[str]:
        return []

    @classmethod
    def describe(cls, record: MeasureRecord) -> dict[str, Any]:
        return {
            "summary": f"measured {record.image}",
            "model": "arithmetic",
            "image": record.image,
            "target": f"{record.image} {record.region}",
            "rows": [("pixels", str(record.pixels))],
        }


@pytest.fixture
def measure() -> Iterator[type[MeasureTool]]:
    register("tool")(MeasureTool)
    yield MeasureTool
    unregister("tool", "measure")


def test_a_registered_tool_is_offered_run_recorded_and_shown(
    measure: type[MeasureTool], tmp_path: Path, item: Item, slide_path: Path
) -> None:
    from giant.tracking.viewer import write_html

    step = {"reasoning": "how big?", "action": {"type": "measure"}}
    provider = scripted(tmp_path, [crop(1000, 500, 3000, 1200), step, answer(2)])
    out = tmp_path / "out"
    tool = measure.load(MeasureSettings(unit="px"))
    traj = run(item, slide_path, provider, out, max_steps=6, loaded={"measure": tool}, tools=["measure"])
    assert traj.status == "answered"
    # the schema and the prompt offer it
    conversation, ctx = provider.sent[0]
    assert ctx.extra_actions == ("measure",)
    assert (
        "measure" in step_schema(offered_actions(ctx))["properties"]["action"]["properties"]["type"]["enum"]
    )
    assert isinstance(step_from_data(step, "").action, MeasureAction)
    assert tool.prompt() in (conversation.system or "")
    # the trajectory records its result, the model is told it, and the JSON reads back
    [record] = traj.tool_calls
    assert isinstance(record, MeasureRecord) and record.pixels == 3000 * 1200 and record.image == "crop 1"
    assert "crop 1 covers 3600000 level-0 pixels." in texts(provider.sent[2][0])
    assert Trajectory.model_validate_json((out / "trajectory.json").read_text()).tool_calls == [record]
    # the trajectory page renders it
    page = write_html(out, traj).read_text()
    assert "measured crop 1" in page and "<td>3600000</td>" in page


class ShoutAction(ActionModel):
    type: Literal["shout"] = "shout"
    text: NonEmptyStr  # the answer's and the note's field, with the same constraints


class ShoutTool(MeasureTool):
    name = "shout"
    action = ShoutAction
    description = "Say something loudly."
    hints: ClassVar[dict[str, str]] = {"text": "shout: what to say (null for other actions)."}


def test_a_tool_the_run_does_not_offer_changes_nothing_sent(tmp_path: Path) -> None:
    """The schema and function tools a request carries are built from the actions the run offers: a
    registered tool that shares a field (and rewords its hint) leaves every other run's bytes, and so
    its ledger keys, as they were."""

    def sent(**ctx: Any) -> str:
        offered = make_ctx(**ctx)
        tools = [(t.name, t.description, t.parameters()) for t in offered_tools(offered)]
        return json.dumps([step_schema(offered_actions(offered)), tools])

    runs = [{}, {"extra_actions": ("note",)}, {"allow_crop": False}]
    before = [sent(**ctx) for ctx in runs]
    register("tool")(ShoutTool)
    try:
        assert [sent(**ctx) for ctx in runs] == before
        shouting = json.loads(sent(extra_actions=("shout",)))
        action = shouting[0]["properties"]["action"]["properties"]
        assert action["type"]["enum"] == ["crop", "answer", "shout"]
        assert action["text"]["description"] == ShoutTool.hints["text"]
        assert [name for name, *_ in shouting[1]] == ["slide_zoom", "shout"]
    finally:
        unregister("tool", "shout")
