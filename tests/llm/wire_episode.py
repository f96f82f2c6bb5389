"""Whole episodes through the real SDKs against a peer that answers like the API it stands for.

`WirePeer` is an httpx2.MockTransport handler that reads each request (which API, which protocol,
reasoning or thinking on) and replies with the action its policy picks for that call: a crop inside
the slide, a note or the answer, as a step JSON, a function call or a tool use as the API would send
it. It keeps every request body exactly as it went over the wire, so tests (and
benchmarks/cache_billing.py) can check what caches.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2

from giant.agent.episode import run_episode
from giant.agent.modes import parse_agent
from giant.core import Item
from giant.llm.config import ProviderConfig
from giant.llm.factory import build_provider
from giant.record.trajectory import Trajectory
from tests.llm.mock_api import (
    chat_body,
    function_call,
    message,
    messages_body,
    responses_body,
    step_json,
    text_block,
    tool_use,
)

Policy = Callable[[int], str]  # 1-based call number -> "crop" | "note" | "answer"
ANSWER = '<report>seen enough</report>\n<response>{"answer": 2}</response>'


def answer_at(t: int) -> Policy:
    """Crop until call t, answer there (a model that follows the step budget)."""
    return lambda n: "answer" if n >= t else "crop"


class WirePeer:
    def __init__(self, policy: Policy, width: int, height: int, seed: int = 0) -> None:
        self.policy = policy
        self.width, self.height = width, height
        self.rng = random.Random(seed)
        self.requests: list[dict[str, Any]] = []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content or b"{}")
        self.requests.append(body)
        n = len(self.requests)
        kind = self.policy(n)
        path = request.url.path
        if path.endswith("/responses"):
            reply = self._responses(body, kind, n)
        elif path.endswith("/messages"):
            reply = self._messages(body, kind, n)
        else:
            reply = chat_body(step_json(self._action(kind)))
        return httpx2.Response(200, json=reply, headers={"x-request-id": f"req_{n}"})

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handler))

    def _box(self) -> dict[str, int]:
        side = self.rng.randint(min(self.width, self.height) // 10, min(self.width, self.height) // 2)
        x, y = self.rng.randint(0, self.width - side), self.rng.randint(0, self.height - side)
        return {"x": x, "y": y, "width": side, "height": side}

    def _action(self, kind: str) -> dict[str, Any]:
        if kind == "crop":
            return {"type": "crop", **self._box()}
        return {"type": kind, "text": ANSWER if kind == "answer" else "a gland pattern on the left"}

    def _responses(self, body: dict[str, Any], kind: str, n: int) -> dict[str, Any]:
        output: list[dict[str, Any]] = []
        if body.get("include"):
            output.append(
                {"type": "reasoning", "id": f"rs_{n}", "summary": [], "encrypted_content": f"enc{n}" * 40}
            )
        action = self._action(kind)
        if "tools" not in body:
            output.append(message(step_json(action)))
        elif kind == "answer":
            output.append(message(ANSWER))
        elif kind == "crop":
            args = {"x0": action["x"], "y0": action["y"], "w": action["width"], "h": action["height"]}
            output.append(function_call("slide_zoom", args, f"call_{n}"))
        else:
            output.append(function_call("note", {"observation": action["text"]}, f"call_{n}"))
        return responses_body(*output, id=f"resp_{n}")

    def _messages(self, body: dict[str, Any], kind: str, n: int) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if body.get("thinking"):
            content.append({"type": "thinking", "thinking": f"thought {n}", "signature": f"sig{n}" * 20})
        action = self._action(kind)
        tools = [t["name"] for t in body.get("tools", [])]
        if "submit_step" in tools:
            content.append(tool_use("submit_step", json.loads(step_json(action)), f"toolu_{n}"))
        elif kind == "answer":
            content.append(text_block(ANSWER))
        elif kind == "crop":
            args = {"x0": action["x"], "y0": action["y"], "w": action["width"], "h": action["height"]}
            content += [text_block("closer"), tool_use("slide_zoom", args, f"toolu_{n}")]
        else:
            content.append(tool_use("note", {"observation": action["text"]}, f"toolu_{n}"))
        stop = "tool_use" if any(block["type"] == "tool_use" for block in content) else "end_turn"
        reply = messages_body(*content, stop_reason=stop)
        reply["id"] = f"msg_{n}"
        return reply


def run_wire_episode(
    provider: ProviderConfig,
    item: Item,
    slide: Path,
    policy: Policy,
    *,
    size: tuple[int, int],
    out_dir: Path | None = None,
    seed: int = 0,
    **agent: Any,
) -> tuple[Trajectory, list[dict[str, Any]]]:
    """One episode of `agent` settings (a mode and its keys) with the real provider `provider` names
    talking to a WirePeer; returns the trajectory and every request body in order."""
    peer = WirePeer(policy, *size, seed=seed)

    async def go() -> Trajectory:
        built = build_provider(provider, http_client=peer.client())
        return await run_episode(item, slide, built, parse_agent(agent), out_dir=out_dir, seed=seed)

    return asyncio.run(go()), peer.requests
