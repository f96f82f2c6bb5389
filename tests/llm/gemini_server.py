"""A loopback Gemini API on 127.0.0.1 for the real google-genai SDK: generateContent and the Batch API.

Its model crops until the request holds `answer_at - 1` model turns and answers there (a structured
step, or a slide_zoom function call / plain text in tools mode). Like Gemini 3 it signs every part it
returns with a thought signature and answers 400 INVALID_ARGUMENT to a request whose history drops or
changes one. `fail` queues error replies for the next generateContent requests (a bad key, an unknown
model, a spent quota, a rate limit, an overload); `finish` makes replies end with a finish reason
(SAFETY); `block` blocks the prompt. Every request is counted (`requests`, `batch_keys`).
Batches (batchGenerateContent, GET batches/<id>, list) end after `polls` polls unless `hold` is set;
`drop_create` creates a batch without answering its create, for the lost-create tests.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.browser import loopback
from tests.llm.mock_api import step_json
from tests.llm.wire_episode import ANSWER

CROP = {"type": "crop", "x": 100, "y": 100, "width": 800, "height": 600}
KEY = "AIzaSyTest-loopback-0123456789"


def error(code: int, status: str, message: str, *details: dict[str, Any]) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status, "details": list(details)}}


BAD_KEY = (
    400,
    error(
        400,
        "INVALID_ARGUMENT",
        "API key not valid. Please pass a valid API key.",
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID",
            "domain": "googleapis.com",
        },
    ),
)
PERMISSION_DENIED = (403, error(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers."))
FLEX_UNSERVED = (400, error(400, "INVALID_ARGUMENT", "Service tier flex is not supported for this model."))
UNKNOWN_MODEL = (
    404,
    error(404, "NOT_FOUND", "models/gemini-9 is not found for API version v1beta, or is not supported."),
)


def exhausted(quota_id: str, delay: str = "1s") -> tuple[int, dict[str, Any]]:
    """A 429 RESOURCE_EXHAUSTED as Gemini sends it, for a per-day quota or a per-minute rate."""
    failure = {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [
            {
                "quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
                "quotaId": quota_id,
            }
        ],
    }
    retry = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
    message = "You exceeded your current quota, please check your plan and billing details."
    return 429, error(429, "RESOURCE_EXHAUSTED", message, failure, retry)


SPENT_QUOTA = exhausted("GenerateRequestsPerDayPerProjectPerModel")
RATE_LIMIT = exhausted("GenerateRequestsPerMinutePerProjectPerModel", "0s")
OVERLOADED = (503, error(503, "UNAVAILABLE", "The model is overloaded. Please try again later."))


class GeminiServer:
    def __init__(self, *, answer_at: int = 3, polls: int = 1) -> None:
        self.answer_at = answer_at
        self.polls = polls
        # error replies for the next requests, in order (a bytes body is sent as it is: a broken reply)
        self.fail: list[tuple[int, dict[str, Any] | bytes]] = []
        self.finish = ""  # a finish reason for every reply (e.g. SAFETY)
        self.block = ""  # a prompt block reason for every reply
        self.usage = {"promptTokenCount": 0, "candidatesTokenCount": 60, "thoughtsTokenCount": 40}
        self.requests: list[dict[str, Any]] = []  # every generateContent body, in order
        self.keys: list[str] = []  # the x-goog-api-key of each request
        self.rejected: list[str] = []  # why a request was answered 400 for its signatures
        self.signed: dict[str, set[str]] = {}  # part digest -> the signatures it was returned with
        self.issued = 0
        self.hold = threading.Event()  # set: batches do not end, whatever the polls
        self.drop_create: set[int] = set()  # batch numbers created without a reply to their create
        self.stall_create = threading.Event()  # set: a create's reply waits until it is cleared
        self.fail_once: set[int] = set()  # batch lines (1-based, in submission order) answered 503 once
        self.expire: set[int] = set()  # batch numbers that end expired, unanswered
        self.batches: list[dict[str, Any]] = []
        self.batch_keys: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._prefixes: set[str] = set()

    # ------------------------------------------------------------------ model

    def reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any] | bytes]:
        """The reply to one generateContent body (shared by direct calls and batch lines)."""
        with self._lock:
            missing = self._missing_signature(body)
            if missing:
                self.rejected.append(missing)
                return 400, error(400, "INVALID_ARGUMENT", missing)
            if self.fail:
                return self.fail.pop(0)
            turns = body.get("contents") or []
            step = 1 + sum(1 for turn in turns if turn.get("role") == "model")
            answer = step >= self.answer_at
            self.issued += 1
            n = self.issued
            part = self._part(body, answer, n)
            signature = base64.b64encode(hashlib.sha256(f"sig{n}".encode()).digest() * 4).decode()
            self.signed.setdefault(_digest(part), set()).add(signature)
            part["thoughtSignature"] = signature
            candidate: dict[str, Any] = {
                "content": {"role": "model", "parts": [part]},
                "finishReason": self.finish or "STOP",
            }
            reply: dict[str, Any] = {
                "candidates": [] if self.block else [candidate],
                "usageMetadata": self._usage(body),
                "modelVersion": "gemini-3-flash-preview",
                "responseId": f"resp-{n}",
            }
            if self.block:
                reply["promptFeedback"] = {"blockReason": self.block}
            return 200, reply

    @staticmethod
    def _part(body: dict[str, Any], answer: bool, n: int) -> dict[str, Any]:
        config = body.get("generationConfig") or {}
        if "responseJsonSchema" in config:
            return {"text": step_json({"type": "answer", "text": ANSWER} if answer else CROP)}
        if answer:
            return {"text": ANSWER}
        args = {"x0": CROP["x"], "y0": CROP["y"], "w": CROP["width"], "h": CROP["height"]}
        return {"functionCall": {"name": "slide_zoom", "args": args, "id": f"call-{n}"}}

    def _usage(self, body: dict[str, Any]) -> dict[str, Any]:
        """Prompt tokens by the request's bytes, and cached tokens as Gemini's implicit cache would
        read them: the longest earlier request that is a prefix of this one (by whole contents)."""
        contents = body.get("contents") or []
        head = json.dumps({k: v for k, v in body.items() if k != "contents"}, sort_keys=True)
        sizes = [len(head) // 4]
        for turn in contents:
            sizes.append(sizes[-1] + len(json.dumps(turn)) // 4)
        cached = 0
        for i in range(len(contents), 0, -1):
            if _prefix_key(head, contents[:i]) in self._prefixes:
                cached = sizes[i]
                break
        for i in range(1, len(contents) + 1):
            self._prefixes.add(_prefix_key(head, contents[:i]))
        prompt = sizes[-1] + self.usage["promptTokenCount"]
        usage = {**self.usage, "promptTokenCount": prompt, "cachedContentTokenCount": cached}
        usage["totalTokenCount"] = prompt + usage["candidatesTokenCount"] + usage["thoughtsTokenCount"]
        return usage

    def _missing_signature(self, body: dict[str, Any]) -> str:
        """Why this request's history is refused: a model part this server returned with a signature
        is sent back without it, or with another one."""
        for turn in body.get("contents") or []:
            if turn.get("role") != "model":
                continue
            for part in turn.get("parts") or []:
                bare = {k: v for k, v in part.items() if k not in ("thoughtSignature", "thought_signature")}
                given = part.get("thoughtSignature") or part.get("thought_signature")
                issued = self.signed.get(_digest(bare))
                if issued is None:
                    return "A model part this model never returned was sent as its turn."
                if given is None or _standard(given) not in issued:
                    return "Function call is missing a thought_signature in functionCall parts."
        return ""

    # ------------------------------------------------------------------ batches

    def submitted(self, model: str, body: dict[str, Any]) -> dict[str, Any]:
        batch_body = body.get("batch") or {}
        lines = ((batch_body.get("inputConfig") or {}).get("requests") or {}).get("requests") or []
        with self._lock:
            batch = {
                "id": f"batches/b{len(self.batches) + 1}",
                "display": batch_body.get("displayName"),
                "model": model,
                "lines": lines,
                "polls": 0,
                "created": time.time(),
            }
            self.batches.append(batch)
            self.batch_keys.update(line["metadata"]["key"] for line in lines)
        return batch

    def batch_wire(self, batch: dict[str, Any], ended: bool) -> dict[str, Any]:
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(batch["created"]))
        number = self.batches.index(batch) + 1
        state = "BATCH_STATE_EXPIRED" if number in self.expire else "BATCH_STATE_SUCCEEDED"
        metadata: dict[str, Any] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch",
            "model": batch["model"],
            "displayName": batch["display"],
            "state": state if ended else "BATCH_STATE_RUNNING",
            "createTime": created,
        }
        if ended and number not in self.expire:
            if "results" not in batch:
                first = sum(len(b["lines"]) for b in self.batches[: number - 1])
                batch["results"] = [self._line(line, first + i + 1) for i, line in enumerate(batch["lines"])]
            metadata["output"] = {"inlinedResponses": {"inlinedResponses": batch["results"]}}
        return {"name": batch["id"], "metadata": metadata, "done": ended}

    def created(self, batch: dict[str, Any]) -> bool:
        """Whether the create request is answered (else the connection closes without a reply)."""
        while self.stall_create.is_set():
            time.sleep(0.01)
        return self.batches.index(batch) + 1 not in self.drop_create

    def _line(self, line: dict[str, Any], number: int) -> dict[str, Any]:
        if number in self.fail_once:
            self.fail_once.discard(number)
            return {
                "error": {"code": 14, "message": "The model is overloaded."},
                "metadata": line["metadata"],
            }
        status, reply = self.reply(line["request"])
        if status != 200:
            return {
                "error": {"code": status, "message": reply["error"]["message"]},
                "metadata": line["metadata"],
            }
        return {"response": reply, "metadata": line["metadata"]}

    def ended(self, batch: dict[str, Any]) -> bool:
        batch["polls"] += 1
        return not self.hold.is_set() and batch["polls"] > self.polls


def _digest(part: dict[str, Any]) -> str:
    """A part's identity, whatever the casing the SDK sent its keys in (functionCall / function_call)."""
    return hashlib.sha256(json.dumps(_camel(part), sort_keys=True).encode()).hexdigest()


def _camel(value: Any) -> Any:
    if isinstance(value, dict):
        return {re.sub(r"_(\w)", lambda m: m[1].upper(), k): _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def _standard(signature: str) -> str:
    """A base64 signature in the standard alphabet (the SDK sends the URL-safe one)."""
    return base64.b64encode(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))).decode()


def _prefix_key(head: str, contents: list[dict[str, Any]]) -> str:
    return hashlib.sha256((head + json.dumps(_camel(contents), sort_keys=True)).encode()).hexdigest()


def _handler(server: GeminiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, body: Any) -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()  # bytes: sent as they are
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            body = json.loads(raw or b"{}")
            server.keys.append(self.headers.get("x-goog-api-key", ""))
            if match := re.fullmatch(r"/v1\w*/models/([\w.-]+):generateContent", self.path):
                server.requests.append(body)
                self._send(*server.reply(body))
            elif match := re.fullmatch(r"/v1\w*/models/([\w.-]+):batchGenerateContent", self.path):
                batch = server.submitted(f"models/{match[1]}", body)
                if not server.created(batch):
                    self.close_connection = True  # made, but its create is never answered
                    return
                self._send(200, server.batch_wire(batch, False))
            else:
                self._send(404, error(404, "NOT_FOUND", f"no route {self.path}"))

        def do_GET(self) -> None:
            path = self.path.partition("?")[0]
            if re.fullmatch(r"/v1\w*/batches", path):
                ops = [server.batch_wire(b, "results" in b) for b in reversed(server.batches)]
                self._send(200, {"operations": ops})
            elif match := re.fullmatch(r"/v1\w*/(batches/[\w-]+)", path):
                batch = next(b for b in server.batches if b["id"] == match[1])
                self._send(200, server.batch_wire(batch, server.ended(batch)))
            else:
                self._send(404, error(404, "NOT_FOUND", f"no route {self.path}"))

    return Handler


@contextmanager
def serving(server: GeminiServer) -> Iterator[str]:
    """The server on a free loopback port; yields its base URL (provider.base_url)."""
    with loopback(_handler(server)) as url:
        yield url
