"""A loopback HTTP server that answers like OpenAI's Responses API, for whole jobs in a subprocess
(the CLI cannot take an httpx2.MockTransport): a crop at every call until call `t`, then the answer.

Stateless: the call number is one more than the assistant turns the request sends back, and the crop
boxes follow from the request's first messages, so concurrent items and reruns get the same replies.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.llm.mock_api import message, responses_body, step_json

ANSWER = '<report>seen enough</report>\n<response>{"answer": 2}</response>'
SLIDE = (3200, 2400)  # the demo's synthetic slides (giant/data/demo.py)
SIDE = (300, 1200)  # crop sides in level-0 pixels


def action(body: dict[str, Any], t: int) -> dict[str, Any]:
    """The step for this request: a crop inside the slide before call t, the answer at call t."""
    history = body.get("input", [])
    call = 1 + sum(1 for part in history if part.get("role") == "assistant")
    if call >= t:
        return {"type": "answer", "text": ANSWER}
    digest = hashlib.sha256(json.dumps(history[:2], sort_keys=True).encode()).digest()
    side = SIDE[0] + (digest[call % 32] * 7 + call * 53) % (SIDE[1] - SIDE[0])
    x = (digest[(call + 1) % 32] * 97 + call * 311) % (SLIDE[0] - side)
    y = (digest[(call + 2) % 32] * 89 + call * 173) % (SLIDE[1] - side)
    return {"type": "crop", "x": x, "y": y, "width": side, "height": side}


class _Handler(BaseHTTPRequestHandler):
    def __init__(self, *args: Any, t: int, **kwargs: Any) -> None:
        self.t = t
        super().__init__(*args, **kwargs)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        reply = json.dumps(responses_body(message(step_json(action(body, self.t))))).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: object) -> None:
        return


@contextmanager
def responses_peer(t: int) -> Iterator[str]:
    """Serve on 127.0.0.1 (a free port); yields the base URL to pass as provider.base_url."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, t=t))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
