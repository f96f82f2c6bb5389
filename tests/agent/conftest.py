"""Agent test fixtures: one small real SVS per module, scripted providers written from step lists."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from giant.agent.episode import run_episode
from giant.agent.modes import parse_agent
from giant.core import Item
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.llm.types import CallContext, Conversation, ModelTurn, Provider
from giant.record.trajectory import Trajectory
from giant.tools import Tool
from giant.wsi.synthetic import write_synthetic_slide

WIDTH, HEIGHT = 6000, 4000


@pytest.fixture(scope="module")
def slide_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_synthetic_slide(tmp_path_factory.mktemp("slide") / "slide.svs", WIDTH, HEIGHT, seed=3)


@pytest.fixture(scope="module")
def item() -> Item:
    return Item(
        benchmark="tcga_slidebench",
        benchmark_id="7",
        image_path="slide.svs",
        prompt='Which tissue is this?\n1. a\n2. b\n3. c\n4. d\nAnswer as {"answer": N}.',
        options=("a", "b", "c", "d"),
        truth=2,
        metric="accuracy",
    )


def crop(x: int, y: int, w: int, h: int, call_id: str | None = None) -> dict[str, Any]:
    step: dict[str, Any] = {
        "reasoning": "look closer",
        "action": {"type": "crop", "x": x, "y": y, "width": w, "height": h},
    }
    if call_id:
        step["call_id"] = call_id
    return step


def answer(label: int = 2) -> dict[str, Any]:
    text = f'<report>seen enough</report>\n<response>{{"answer": {label}}}</response>'
    return {"reasoning": "decide", "action": {"type": "answer", "text": text}}


def note(text: str) -> dict[str, Any]:
    return {"reasoning": "remember", "action": {"type": "note", "text": text}}


def error(kind: str) -> dict[str, Any]:
    return {"error": kind}


class Recording:
    """Wraps a real provider to observe what the agent sends (the scripted provider cannot show it)
    and, optionally, to bill each call (the scripted provider reports zero cost)."""

    def __init__(self, inner: Provider, cost_per_call: float | None = None) -> None:
        self.inner = inner
        self.name, self.model = inner.name, inner.model
        self.cost_per_call = cost_per_call
        self.sent: list[tuple[Conversation, CallContext]] = []
        self.in_flight = self.max_in_flight = 0

    async def next_turn(self, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        self.sent.append((conversation, ctx))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            turn = await self.inner.next_turn(conversation, ctx)
        finally:
            self.in_flight -= 1
        if self.cost_per_call is not None:
            turn = turn.model_copy(
                update={"usage": turn.usage.model_copy(update={"cost_usd": self.cost_per_call})}
            )
        return turn


def scripted(tmp_path: Path, lines: list[Any], *, cost_per_call: float | None = None) -> Recording:
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(line) + "\n" for line in lines))
    inner = build_provider(provider_settings("scripted", script=str(script)))
    return Recording(inner, cost_per_call)


def run(
    item: Item,
    slide: Path,
    provider: Provider,
    out_dir: Path | None = None,
    *,
    seed: int = 0,
    record_requests: bool = False,
    loaded: Mapping[str, Tool[Any, Any, Any]] | None = None,
    **cfg: Any,
) -> Trajectory:
    """One episode with these agent settings; `loaded` are the run's loaded tools (giant.tools)."""
    episode = run_episode(
        item,
        slide,
        provider,
        parse_agent(cfg),
        out_dir=out_dir,
        seed=seed,
        record_requests=record_requests,
        tools=loaded,
    )
    return asyncio.run(episode)


def texts(conversation: Conversation) -> str:
    """Every text part of the conversation's user messages, joined: what the model was told."""
    return "\n".join(
        part.text
        for message in conversation.messages
        if message.role == "user"
        for part in message.parts
        if part.type == "text"
    )
