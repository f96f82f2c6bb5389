"""A loopback stub of OpenAI's Files + Batches API and Anthropic's Message Batches, for the real SDKs.

It answers every request of a batch like a model that crops until step `answer_at` and answers there
(a structured step), counts every custom_id it was ever sent (a request submitted twice shows as a
count of 2), and can hold a batch in flight (`hold`), end it after some polls, fail chosen requests
once, let a batch expire or be cancelled half done, and create a batch but never answer the create
request (`drop_create`: the connection closes; `stall_create`: the reply waits, for a kill -9).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.llm.mock_api import message, messages_body, responses_body, step_json, tool_use
from tests.llm.wire_episode import ANSWER

CROP = {"type": "crop", "x": 100, "y": 100, "width": 800, "height": 600}


class BatchStub:
    def __init__(self, *, answer_at: int = 3, polls: int = 1) -> None:
        self.answer_at = answer_at
        self.polls = polls  # polls a batch stays in progress before it ends
        self.hold = threading.Event()  # set: batches do not end, whatever the polls
        self.fail_once: set[int] = set()  # global request numbers (1-based) answered 500 the first time
        self.expire: set[int] = set()  # batch numbers (1-based) that end expired, unanswered
        self.cancel: set[int] = set()  # batch numbers cancelled with only their first half answered
        self.drop_create: set[int] = set()  # batch numbers created without a reply to their create
        self.stall_create = threading.Event()  # set: a create's reply waits until it is cleared
        self.received: Counter[str] = Counter()
        self.batches: list[dict[str, Any]] = []  # per batch: id, requests, polls, provider
        self.files: dict[str, bytes] = {}
        self.port = 0
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ model

    @staticmethod
    def _step(body: dict[str, Any]) -> int:
        turns = body.get("input") or body.get("messages") or []
        return 1 + sum(1 for turn in turns if turn.get("role") == "assistant")

    def _reply(self, body: dict[str, Any], n: int) -> dict[str, Any]:
        action = {"type": "answer", "text": ANSWER} if self._step(body) >= self.answer_at else CROP
        if "messages" in body:
            reply = messages_body(tool_use("submit_step", json.loads(step_json(action)), f"toolu_{n}"))
            reply.update(id=f"msg_{n}", stop_reason="tool_use")
            return reply
        return responses_body(message(step_json(action)), id=f"resp_{n}")

    def _submitted(
        self, provider: str, requests: list[dict[str, Any]], metadata: dict[str, str] | None = None
    ) -> dict[str, Any]:
        with self._lock:
            batch = {"id": f"batch_{len(self.batches) + 1}", "provider": provider, "polls": 0}
            batch.update(requests=requests, created=time.time(), metadata=metadata or None)
            self.batches.append(batch)
            self.received.update(r["custom_id"] for r in requests)
            return batch

    def _results(self, batch: dict[str, Any]) -> list[tuple[str, int, dict[str, Any]]]:
        """(custom_id, HTTP status, reply or error body) per request; made once, when it ends."""
        if "results" not in batch:
            number = self.batches.index(batch) + 1
            out: list[tuple[str, int, dict[str, Any]]] = []
            requests = [] if number in self.expire else batch["requests"]
            if number in self.cancel:
                requests = requests[: len(requests) // 2]
            for request in requests:
                n = self._number(request["custom_id"], batch)
                body = request.get("body") or request.get("params")
                if n in self.fail_once:
                    self.fail_once.discard(n)
                    out.append((request["custom_id"], 500, {"type": "api_error", "message": "overloaded"}))
                else:
                    out.append((request["custom_id"], 200, self._reply(body, n)))
            batch["results"] = out
        return batch["results"]  # type: ignore[no-any-return]

    def _number(self, custom_id: str, batch: dict[str, Any]) -> int:
        """The request's 1-based number in the order all batches received them."""
        n = 0
        for earlier in self.batches:
            for request in earlier["requests"]:
                n += 1
                if earlier is batch and request["custom_id"] == custom_id:
                    return n
        raise KeyError(custom_id)

    def _ended(self, batch: dict[str, Any]) -> bool:
        batch["polls"] += 1
        return not self.hold.is_set() and batch["polls"] > self.polls

    # ------------------------------------------------------------------ wire

    def openai_batch(self, batch: dict[str, Any], ended: bool) -> dict[str, Any]:
        number = self.batches.index(batch) + 1
        status = "in_progress"
        out: dict[str, Any] = {}
        if ended:
            status = "expired" if number in self.expire else "completed"
            status = "cancelled" if number in self.cancel else status
            results = self._results(batch)
            good = "\n".join(
                json.dumps({"id": f"r{i}", "custom_id": c, "response": {"status_code": s, "body": b}})
                for i, (c, s, b) in enumerate(results)
                if s == 200
            )
            bad = [(c, s, b) for c, s, b in results if s != 200]
            bad_lines = [
                json.dumps(
                    {"custom_id": c, "response": {"status_code": s, "body": {"error": b}}, "error": None}
                )
                for c, s, b in bad
            ]
            if number in self.expire:
                bad_lines += [
                    json.dumps(
                        {"custom_id": r["custom_id"], "response": None, "error": {"code": "batch_expired"}}
                    )
                    for r in batch["requests"]
                ]
            if good:
                self.files[f"out_{batch['id']}"] = good.encode()
                out["output_file_id"] = f"out_{batch['id']}"
            if bad_lines:
                self.files[f"err_{batch['id']}"] = "\n".join(bad_lines).encode()
                out["error_file_id"] = f"err_{batch['id']}"
        total = len(batch["requests"])
        return {
            "id": batch["id"],
            "object": "batch",
            "endpoint": "/v1/responses",
            "completion_window": "24h",
            "created_at": int(batch["created"]),
            "metadata": batch["metadata"],
            "input_file_id": "file_in",
            "status": status,
            "request_counts": {"total": total, "completed": total if ended else 0, "failed": 0},
            **out,
        }

    def anthropic_batch(self, batch: dict[str, Any], ended: bool) -> dict[str, Any]:
        total = len(batch["requests"])
        counts = {"processing": 0 if ended else total, "succeeded": total if ended else 0}
        return {
            "id": batch["id"],
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": {"errored": 0, "canceled": 0, "expired": 0, **counts},
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(batch["created"])),
            "expires_at": "2025-01-02T00:00:00Z",
            "ended_at": "2025-01-01T01:00:00Z" if ended else None,
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"http://127.0.0.1:{self.port}/v1/messages/batches/{batch['id']}/results"
            if ended
            else None,
        }

    def anthropic_results(self, batch: dict[str, Any]) -> bytes:
        number = self.batches.index(batch) + 1
        lines = []
        if number in self.expire:
            lines = [{"custom_id": r["custom_id"], "result": {"type": "expired"}} for r in batch["requests"]]
        if number in self.cancel:
            rest = batch["requests"][len(batch["requests"]) // 2 :]
            lines = [{"custom_id": r["custom_id"], "result": {"type": "canceled"}} for r in rest]
        for custom_id, status, body in self._results(batch):
            if status == 200:
                lines.append({"custom_id": custom_id, "result": {"type": "succeeded", "message": body}})
            else:
                error = {"type": "error", "error": body}
                lines.append({"custom_id": custom_id, "result": {"type": "errored", "error": error}})
        return "\n".join(json.dumps(line) for line in lines).encode()

    def batch(self, batch_id: str) -> dict[str, Any]:
        return next(b for b in self.batches if b["id"] == batch_id)

    def listing(self, provider: str) -> dict[str, Any]:
        """Every batch of the provider, newest first, on one page."""
        wire = self.openai_batch if provider == "openai" else self.anthropic_batch
        data = [wire(b, "results" in b) for b in reversed(self.batches) if b["provider"] == provider]
        ids = [b["id"] for b in data]
        listing = {"data": data, "has_more": False, "first_id": ids[0] if ids else None}
        return {**listing, "last_id": ids[-1] if ids else None, "object": "list"}

    def created(self, batch: dict[str, Any]) -> bool:
        """Whether the create request is answered (else the connection closes without a reply)."""
        while self.stall_create.is_set():
            time.sleep(0.01)
        return self.batches.index(batch) + 1 not in self.drop_create


def _handler(stub: BatchStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, body: Any, status: int = 200) -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            if self.path == "/v1/files":
                lines = [line for line in raw.decode().splitlines() if line.startswith('{"custom_id"')]
                file_id = f"file_{len(stub.files) + 1}"
                stub.files[file_id] = "\n".join(lines).encode()
                self._send(
                    {
                        "id": file_id,
                        "object": "file",
                        "bytes": len(raw),
                        "created_at": 0,
                        "filename": "giant-batch.jsonl",
                        "purpose": "batch",
                        "status": "processed",
                    }
                )
            elif self.path == "/v1/batches":
                body = json.loads(raw)
                requests = [json.loads(line) for line in stub.files[body["input_file_id"]].splitlines()]
                batch = stub._submitted("openai", requests, body.get("metadata"))
                if stub.created(batch):
                    self._send(stub.openai_batch(batch, False))
            elif self.path == "/v1/messages/batches":
                batch = stub._submitted("anthropic", json.loads(raw)["requests"])
                if stub.created(batch):
                    self._send(stub.anthropic_batch(batch, False))
            else:
                self._send({"error": {"message": f"no route {self.path}"}}, 404)

        def do_GET(self) -> None:
            path = self.path.partition("?")[0]
            if path in ("/v1/batches", "/v1/messages/batches"):
                self._send(stub.listing("openai" if path == "/v1/batches" else "anthropic"))
            elif match := re.fullmatch(r"/v1/batches/([\w-]+)", self.path):
                batch = stub.batch(match[1])
                self._send(stub.openai_batch(batch, stub._ended(batch)))
            elif match := re.fullmatch(r"/v1/files/([\w-]+)/content", self.path):
                self._send(stub.files[match[1]])
            elif match := re.fullmatch(r"/v1/messages/batches/([\w-]+)/results", self.path):
                self._send(stub.anthropic_results(stub.batch(match[1])))
            elif match := re.fullmatch(r"/v1/messages/batches/([\w-]+)", self.path):
                batch = stub.batch(match[1])
                self._send(stub.anthropic_batch(batch, stub._ended(batch)))
            else:
                self._send({"error": {"message": f"no route {self.path}"}}, 404)

    return Handler


@contextmanager
def serving(stub: BatchStub) -> Iterator[str]:
    """The stub on 127.0.0.1 in a thread; yields its root URL (Anthropic's base_url; OpenAI's adds /v1)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stub))
    stub.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{stub.port}"
    finally:
        server.shutdown()
        server.server_close()
