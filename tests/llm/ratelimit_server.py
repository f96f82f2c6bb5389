"""A loopback API that enforces rate limits the way providers do, for the real SDKs (tests, benchmarks).

It answers OpenAI's Responses, Anthropic's Messages and Gemini's generateContent with one structured
crop step after `latency_s`, and enforces `rpm` and `tpm` with a one-second quantum: each limit is a
bucket holding one second's worth, refilled continuously (60 RPM: one request per second, however
many a minute has left). A request over it is answered 429 at once, in its provider's style:
- openai: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` on every reply (remaining and reset
  of the last minute, reset as "1.5s"), `retry-after` (whole seconds) on a 429;
- anthropic: `anthropic-ratelimit-{requests,input-tokens}-{limit,remaining,reset}` (reset as an RFC
  3339 time) on every reply, `retry-after` on a 429; its token limit counts input tokens, as
  Anthropic's input-tokens-per-minute does;
- gemini: no headers; a 429 RESOURCE_EXHAUSTED with a QuotaFailure naming the per-minute quota and
  its value, and RetryInfo's retryDelay ("1s"); its token limit counts input tokens, as the quota it
  names (GenerateContentInputTokensPerModelPerMinute) does.
A request's tokens are its text's characters / 4 (images are not sent by the benchmark's lanes) plus
its output cap; the reply's usage says the same, so the client's estimate and the server's count
agree. Every arrival is kept (`arrivals`: monotonic time, status).
"""

from __future__ import annotations

import json
import math
import multiprocessing
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from tests.browser import loopback
from tests.llm.mock_api import message, messages_body, responses_body, step_json, tool_use
from tests.llm.wire_episode import ANSWER

Style = Literal["openai", "anthropic", "gemini"]
CROP = {"type": "crop", "x": 100, "y": 200, "width": 3000, "height": 2000}
WINDOW_S = 60.0


class Quota:
    """One limit: a bucket of one second's worth, refilled continuously, and the last minute's use."""

    def __init__(self, per_minute: float) -> None:
        self.per_minute = per_minute
        self.rate = per_minute / 60.0
        self.level = self.rate  # a second's worth
        self.at = time.monotonic()
        self.used: deque[tuple[float, float]] = deque()

    def _refill(self, now: float) -> None:
        self.level = min(self.rate, self.level + (now - self.at) * self.rate)
        self.at = now
        while self.used and self.used[0][0] <= now - WINDOW_S:
            self.used.popleft()

    def wait_s(self, units: float, now: float) -> float:
        """0 when `units` may go now, else the seconds until they may."""
        self._refill(now)
        need = min(units, self.rate)  # a request over a second's worth goes when the bucket is full
        return 0.0 if self.level >= need - 1e-9 else (need - self.level) / self.rate

    def take(self, units: float, now: float) -> None:
        self.level -= units
        self.used.append((now, units))

    def remaining(self, now: float) -> tuple[float, float]:
        """What the last minute leaves, and the seconds until it is whole again (the headers)."""
        self._refill(now)
        left = max(0.0, self.per_minute - sum(u for _, u in self.used))
        reset = self.used[0][0] + WINDOW_S - now if self.used and left < self.per_minute else 0.0
        return math.floor(left), max(0.0, reset)


class RateLimitedAPI:
    def __init__(
        self,
        style: Style,
        *,
        rpm: float | None = None,
        tpm: float | None = None,
        latency_s: float = 1.0,
        headers: bool = True,
        answer_at: int | None = None,
    ) -> None:
        self.style = style
        self.answer_at = answer_at  # answer once a request holds answer_at - 1 model turns (None: crop)
        self.requests = Quota(rpm) if rpm else None
        self.tokens = Quota(tpm) if tpm else None
        self.latency_s = latency_s
        self.headers = headers and style != "gemini"
        self.lock = threading.Lock()
        self.arrivals: list[tuple[float, int]] = []

    # ------------------------------------------------------------------------- accounting

    def _tokens(self, body: dict[str, Any]) -> tuple[int, int]:
        """Input (text characters / 4 + 1, as giant estimates it) and the output cap."""
        chars = 0

        def walk(value: Any, key: str = "") -> None:
            nonlocal chars
            if isinstance(value, dict):
                for k, v in value.items():
                    if k not in ("text_format", "format", "tools", "generationConfig", "output_config"):
                        walk(v, k)
            elif isinstance(value, list):
                for v in value:
                    walk(v, key)
            elif isinstance(value, str) and key in ("text", "instructions", "system", "content"):
                chars += len(value)

        walk(
            {
                k: v
                for k, v in body.items()
                if k in ("input", "instructions", "system", "messages", "contents", "systemInstruction")
            }
        )
        cap = body.get("max_output_tokens") or body.get("max_tokens")
        cap = cap or (body.get("generationConfig") or {}).get("maxOutputTokens") or 0
        return chars // 4 + 1, int(cap)

    def admit(self, body: dict[str, Any]) -> tuple[int, dict[str, str], dict[str, Any], int, int]:
        """Status, headers, body of the reply, and the counted input/output tokens."""
        inputs, cap = self._tokens(body)
        counted = inputs + cap if self.style == "openai" else inputs  # the others limit input tokens
        with self.lock:
            now = time.monotonic()
            waits = {"requests": self.requests.wait_s(1, now) if self.requests else 0.0}
            waits["tokens"] = self.tokens.wait_s(counted, now) if self.tokens else 0.0
            refused = max(waits, key=lambda k: waits[k]) if max(waits.values()) > 0 else None
            if refused is None:
                for quota, units in ((self.requests, 1), (self.tokens, counted)):
                    if quota is not None:
                        quota.take(units, now)
            headers = self._headers(now) if self.headers else {}
            self.arrivals.append((now, 429 if refused else 200))
        if refused is not None:
            return (429, *self._refusal(refused, waits[refused], headers), inputs, cap)
        return 200, headers, {}, inputs, cap

    def _headers(self, now: float) -> dict[str, str]:
        out: dict[str, str] = {}
        for kind, quota in (("requests", self.requests), ("tokens", self.tokens)):
            if quota is None:
                continue
            left, reset = quota.remaining(now)
            if self.style == "openai":
                out[f"x-ratelimit-limit-{kind}"] = f"{quota.per_minute:g}"
                out[f"x-ratelimit-remaining-{kind}"] = f"{left:g}"
                out[f"x-ratelimit-reset-{kind}"] = f"{reset:.3f}s"
            else:
                name = "requests" if kind == "requests" else "input-tokens"
                at = datetime.fromtimestamp(time.time() + reset, tz=UTC).isoformat().replace("+00:00", "Z")
                out[f"anthropic-ratelimit-{name}-limit"] = f"{quota.per_minute:g}"
                out[f"anthropic-ratelimit-{name}-remaining"] = f"{left:g}"
                out[f"anthropic-ratelimit-{name}-reset"] = at
        return out

    def _refusal(
        self, kind: str, wait: float, headers: dict[str, str]
    ) -> tuple[dict[str, str], dict[str, Any]]:
        seconds = max(1, math.ceil(wait))
        if self.style == "openai":
            body = {
                "error": {
                    "message": f"Rate limit reached for {kind}",
                    "type": kind,
                    "code": "rate_limit_exceeded",
                }
            }
            return {**headers, "retry-after": str(seconds)}, body
        if self.style == "anthropic":
            body = {"type": "error", "error": {"type": "rate_limit_error", "message": f"{kind} rate limit"}}
            return {**headers, "retry-after": str(seconds)}, body
        quota = self.requests if kind == "requests" else self.tokens
        assert quota is not None
        quota_id = (
            "GenerateRequestsPerMinutePerProjectPerModel"
            if kind == "requests"
            else ("GenerateContentInputTokensPerModelPerMinute")
        )
        failure = {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [{"quotaId": quota_id, "quotaValue": f"{quota.per_minute:g}"}],
        }
        retry = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{seconds}s"}
        error = {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota", "details": [failure, retry]}
        return {}, {"error": error}

    # ------------------------------------------------------------------------- replies

    def step(self, body: dict[str, Any]) -> dict[str, Any]:
        """A crop, or the answer once the episode has had answer_at - 1 turns."""
        text = json.dumps(body)
        turns = text.count('"role": "assistant"') + text.count('"role": "model"')
        if self.answer_at is not None and turns + 1 >= self.answer_at:
            return {"type": "answer", "text": ANSWER}
        return CROP

    def reply(self, inputs: int, output: int, body: dict[str, Any]) -> dict[str, Any]:
        action = self.step(body)
        if self.style == "openai":
            usage = {
                "input_tokens": inputs,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": output,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": inputs + output,
            }
            return responses_body(message(step_json(action)), usage=usage)
        if self.style == "anthropic":
            usage = {"input_tokens": inputs, "output_tokens": output}
            return messages_body(
                tool_use("submit_step", {"reasoning": "look", "action": action}, "toolu_1"),
                stop_reason="tool_use",
                usage=usage,
            )
        return {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": step_json(action)}]}, "finishReason": "STOP"}
            ],
            "usageMetadata": {
                "promptTokenCount": inputs,
                "candidatesTokenCount": output,
                "totalTokenCount": inputs + output,
            },
            "modelVersion": "gemini-3-flash-preview",
            "responseId": "resp-1",
        }

    @property
    def refused(self) -> int:
        return sum(status == 429 for _, status in self.arrivals)

    @property
    def answered(self) -> int:
        return sum(status == 200 for _, status in self.arrivals)


def _handler(api: RateLimitedAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            request = json.loads(raw or b"{}")
            status, headers, body, inputs, cap = api.admit(request)
            if status == 200:
                time.sleep(api.latency_s)
                body = api.reply(inputs, cap, request)
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("request-id", "req_rl")
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def serving_apart(api: RateLimitedAPI) -> Iterator[tuple[str, Callable[[], RateLimitedAPI]]]:
    """The API in a process of its own, as a provider's server is (in this process its threads would
    share the GIL with the client, and their pauses would bunch requests the client spaced). Yields
    the base URL and a function returning the API's state as it is then (its `arrivals`)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    context = multiprocessing.get_context("fork")
    parent, child = context.Pipe()

    def serve() -> None:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        child.recv()  # the parent asks once, at the end
        with api.lock:
            child.send(api.arrivals)

    process = context.Process(target=serve, daemon=True)
    process.start()
    server.socket.close()  # the child serves; the parent keeps no copy listening

    def state() -> RateLimitedAPI:
        parent.send("arrivals")
        api.arrivals = parent.recv()
        return api

    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        process.kill()
        process.join()


@contextmanager
def serving(api: RateLimitedAPI) -> Iterator[str]:
    """The API on a free loopback port; yields the base URL for provider.base_url (with /v1 for the
    OpenAI SDK, which the others do not need)."""
    with loopback(_handler(api)) as url:
        yield url
