"""The shared pacer through the real openai SDK over a loopback socket: one lane's 429 holds every lane,
and a server's rate-limit headers pace a campaign with no setting at all."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from tests.browser import loopback
from tests.llm.conftest import make_conversation, make_ctx
from tests.llm.mock_api import message, responses_body, step_json
from tests.llm.ratelimit_server import CROP, RateLimitedAPI, serving

PAUSE_MS = 2000
LATENCY_S = 0.3  # a call answered after this; the first round is all sent before the 429 is back


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback-0123456789")


async def lanes(base_url: str, n_lanes: int, calls: int, **settings: Any) -> None:
    provider = build_provider(provider_settings("openai", model="gpt-5", base_url=base_url, **settings))

    async def lane(n: int) -> None:
        for step in range(1, calls + 1):
            await provider.next_turn(make_conversation(0), make_ctx(item_key=f"lane/{n}", step=step))

    await asyncio.gather(*(lane(n) for n in range(n_lanes)))


def test_one_lanes_429_pauses_every_lane_until_the_named_reset() -> None:
    arrivals: list[tuple[float, int]] = []
    lock = threading.Lock()
    ok = json.dumps(responses_body(message(step_json(CROP)))).encode()
    limited = json.dumps({"error": {"message": "slow down", "code": "rate_limit_exceeded"}}).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            with lock:
                status = 429 if len(arrivals) == 1 else 200  # the second request of the run
                arrivals.append((time.monotonic(), status))
            if status == 200:
                time.sleep(LATENCY_S)
            body = ok if status == 200 else limited
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            if status == 429:
                self.send_header("retry-after-ms", str(PAUSE_MS))
            self.end_headers()
            self.wfile.write(body)

    with loopback(Handler) as url:
        asyncio.run(lanes(f"{url}/v1", n_lanes=4, calls=3, rpm=60_000))
    (refused,) = [at for at, status in arrivals if status == 429]
    assert len(arrivals) == 4 * 3 + 1  # every call answered, the refused one sent once more
    # Every lane, not only the refused one, waits out the pause: after the first round (sent together,
    # in flight when the 429 came back) no request reaches the server until it ends. Without the shared
    # pause the other lanes' second calls come LATENCY_S after their first.
    in_pause = [at for at, _ in arrivals if refused + LATENCY_S * 2 / 3 < at < refused + PAUSE_MS / 1000]
    assert in_pause == []
    assert max(at for at, _ in arrivals) >= refused + PAUSE_MS / 1000


def test_a_servers_headers_pace_lanes_that_set_no_limit() -> None:
    api = RateLimitedAPI("openai", rpm=600, latency_s=0.05)  # ten a second, one second's worth at once
    with serving(api) as url:
        asyncio.run(lanes(f"{url}/v1", n_lanes=8, calls=5))
    assert api.answered == 8 * 5
    assert api.refused <= 1  # the limit is read from the first reply, before the lanes start at once
