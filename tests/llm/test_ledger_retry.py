"""A retry is a new sample, not a replay. After a reply that does not parse, the loop asks again with
the identical request; keyed like the first, the ledger would answer the retry with the very reply it
retries, and `agent.max_retries` could never help. The episode counts its identical requests into the
key (the first keeps the key it always had), so the retry reaches the model, and a rerun of the
episode replays both calls in order, paying nothing. Real openai SDK, real slide, real agent loop."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from giant.agent.episode import run_episode
from giant.agent.modes import parse_agent
from giant.core import Item
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.llm.ledger import Ledger, stats
from giant.record.trajectory import Trajectory
from giant.wsi.synthetic import write_synthetic_slide
from tests.llm.mock_api import message, responses_body, step_json

ITEM = Item(
    benchmark="tcga",
    benchmark_id="1",
    image_path="slide.svs",
    prompt='Which tissue is this?\n1. a\n2. b\nAnswer as {"answer": N}.',
    options=("a", "b"),
    truth=2,
    metric="accuracy",
)
GPT5 = provider_settings("openai", model="gpt-5")
ANSWER = step_json({"type": "answer", "text": '<response>{"answer": 2}</response>'})


class Model:
    """Answers "not a step" `garbled` times, then the answer: a sampled model that got it right on
    its next try."""

    def __init__(self, garbled: int) -> None:
        self.garbled = garbled
        self.requests: list[dict[str, Any]] = []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(json.loads(request.content))
        text = "not a step at all" if len(self.requests) <= self.garbled else ANSWER
        return httpx2.Response(200, json=responses_body(message(text), id=f"resp_{len(self.requests)}"))


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def episode(model: Model, slide: Path, ledger: Ledger, **agent: Any) -> Trajectory:
    async def go() -> Trajectory:
        client = httpx2.AsyncClient(transport=httpx2.MockTransport(model.handler))
        provider = build_provider(GPT5, http_client=client, ledger=ledger)
        return await run_episode(ITEM, slide, provider, parse_agent(agent), out_dir=None)

    return asyncio.run(go())


@pytest.mark.parametrize("mode", ["thumbnail", "giant"])
def test_a_retry_after_a_garbled_reply_asks_the_model_and_a_rerun_replays_both(
    tmp_path: Path, mode: str
) -> None:
    slide = write_synthetic_slide(tmp_path / "slide.svs", 2000, 1500, seed=0)
    ledger = Ledger(tmp_path / "ledger")
    model = Model(garbled=2)
    first = episode(model, slide, ledger, mode=mode, max_retries=3)
    assert len(model.requests) == 3  # the garbled reply, its retry (garbled again), the retry that answers
    assert model.requests[0]["input"] == model.requests[1]["input"] == model.requests[2]["input"]
    assert first.status == "answered" and first.answer is not None, first.reason
    assert [call.error_kind for call in first.calls] == ["parse", "parse", None]
    assert stats(ledger.root).calls == 3  # three paid calls, each kept under its own key

    again = episode(model, slide, ledger, mode=mode, max_retries=3)
    assert len(model.requests) == 3  # the rerun sends nothing
    assert [call.usage.replayed for call in again.calls] == [True, True, True]
    assert again.answer == first.answer and again.status == first.status


def test_without_an_episode_an_identical_request_is_still_one_key(tmp_path: Path) -> None:
    """Calls outside an episode (no SentRequests in their context) keep today's keys: a replay."""
    from tests.llm.conftest import make_conversation, make_ctx

    ledger = Ledger(tmp_path)
    model = Model(garbled=0)

    async def go() -> None:
        client = httpx2.AsyncClient(transport=httpx2.MockTransport(model.handler))
        provider = build_provider(GPT5, http_client=client, ledger=ledger)
        for _ in range(2):
            await provider.next_turn(make_conversation(1), make_ctx())

    asyncio.run(go())
    assert len(model.requests) == 1
