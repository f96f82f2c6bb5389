"""A loopback server that answers as vLLM, Ollama or llama.cpp do, for the real openai SDK.

Each flavour has its own `GET /v1/models` body and its own error bodies (the ones the servers send
for an image limit, a context overflow and an unknown model). Chat calls crop once, then answer;
the server can start refusing images or overflowing its context from a given chat call on, as a
server restarted with other flags mid-run would. Every request is counted and its body kept. A
reasoning model's reply comes as it is served: `think` writes `<think>...</think>` (with a decoy step
inside) before the JSON, as without a reasoning parser; `reasoning_field` puts the thinking beside
`content` under that name, as vLLM's `--reasoning-parser` does.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.llm.mock_api import chat_body, step_json

CROP = {"type": "crop", "x": 0, "y": 0, "width": 400, "height": 400}
ANSWER = {"type": "answer", "text": "1"}
DECOY = {"type": "answer", "text": "4"}  # a valid step inside the think text, never to be taken


@dataclass
class OpenServer:
    flavour: str  # vllm | vllm_new (the {"error": {...}} body of newer vLLM) | ollama | llamacpp
    models: tuple[str, ...] = ("Qwen/Qwen2.5-VL-7B-Instruct",)
    max_model_len: int = 32768
    image_limit: int | None = None  # images one prompt may carry (None: any number)
    refuse_images_from: int = 1  # the chat call (1-based) from which image_limit applies
    context_from: int | None = None  # the chat call from which every prompt overflows the context
    think: bool = False  # <think>...</think> before the JSON (a reasoning model, no reasoning parser)
    reasoning_field: str | None = None  # reasoning_content | reasoning: the parser's field beside content
    reasoning: str = "I see tumour on the left."  # each step's reasoning (a fake vLLM names its model here)
    # GET /v1/models as a server that lists differently answers it: "list" (each flavour's own body),
    # "500" (transformers serve 5.18 without its Hugging Face cache folder), "empty" (it lists cached
    # models only), or another name for each model ("renamed").
    models_reply: str = "list"
    requests: list[str] = field(default_factory=list)  # "GET /v1/models", "POST /v1/chat/completions"
    bodies: list[dict[str, Any]] = field(default_factory=list)  # each chat request's JSON body
    chats: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def models_answer(self) -> tuple[int, dict[str, Any]]:
        if self.models_reply == "500":
            return 500, {"detail": "Internal Server Error"}
        body = self.models_body()
        if self.models_reply == "empty":
            body["data"] = []
        elif self.models_reply == "renamed":
            for entry in body["data"]:
                entry["id"] = f"models--{entry['id'].replace('/', '--')}"
        return 200, body

    def models_body(self) -> dict[str, Any]:
        if self.flavour.startswith("vllm"):
            data = [
                {
                    "id": model,
                    "object": "model",
                    "created": 1_750_000_000,
                    "owned_by": "vllm",
                    "root": model,
                    "parent": None,
                    "max_model_len": self.max_model_len,
                    "permission": [{"id": "modelperm-1", "object": "model_permission"}],
                }
                for model in self.models
            ]
        elif self.flavour == "ollama":
            data = [
                {"id": model, "object": "model", "created": 1_750_000_000, "owned_by": "library"}
                for model in self.models
            ]
        else:
            meta = {"vocab_type": 2, "n_vocab": 152064, "n_ctx_train": 128000, "n_params": 7_615_616_512}
            data = [
                {"id": m, "object": "model", "created": 1_750_000_000, "owned_by": "llamacpp", "meta": meta}
                for m in self.models
            ]
        return {"object": "list", "data": data}

    def error(self, message: str, kind: str = "BadRequestError", **extra: Any) -> tuple[int, dict[str, Any]]:
        """A 400 in the flavour's own shape."""
        if self.flavour == "vllm":
            return 400, {"object": "error", "message": message, "type": kind, "param": None, "code": 400}
        if self.flavour == "llamacpp":
            return 400, {"error": {"code": 400, "message": message, "type": kind, **extra}}
        return 400, {"error": {"message": message, "type": kind, "param": None, "code": 400}}

    def chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.chats += 1
            number = self.chats
            self.bodies.append(body)
        if body["model"] not in self.models and self.flavour == "ollama":
            message = f'model "{body["model"]}" not found, try pulling it first'
            return 404, {"error": {"message": message, "type": "api_error", "param": None, "code": None}}
        if body["model"] not in self.models and self.flavour.startswith("vllm"):
            message = f"The model `{body['model']}` does not exist."
            return 404, {
                "object": "error",
                "message": message,
                "type": "NotFoundError",
                "param": None,
                "code": 404,
            }
        images = sum(
            1
            for message in body["messages"]
            if isinstance(message["content"], list)
            for part in message["content"]
            if part["type"] == "image_url"
        )
        if self.image_limit is not None and number >= self.refuse_images_from and images > self.image_limit:
            if self.flavour.startswith("vllm"):
                return self.error(f"At most {self.image_limit} image(s) may be provided in one prompt.")
            return self.error("this server takes fewer images in one prompt", "invalid_request_error")
        if self.context_from is not None and number >= self.context_from:
            if self.flavour == "llamacpp":
                return self.error(
                    "the request exceeds the available context size, try increasing it",
                    "exceed_context_size_error",
                    n_prompt_tokens=40_000,
                    n_ctx=self.max_model_len,
                )
            return self.error(
                f"This model's maximum context length is {self.max_model_len} tokens. However, you "
                f"requested 40000 tokens (39600 in the messages, 400 in the completion). Please reduce "
                "the length of the messages or completion."
            )
        answered = sum(1 for message in body["messages"] if message["role"] == "assistant")
        text = step_json(CROP if answered == 0 else ANSWER, self.reasoning)
        thinking = f"The overview shows tissue; a step such as {step_json(DECOY)} would be wrong."
        reply = chat_body(f"<think>\n{thinking}\n</think>\n\n{text}" if self.think else text)
        if self.reasoning_field:
            reply["choices"][0]["message"][self.reasoning_field] = thinking
        return 200, reply


def _handler(server: OpenServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _reply(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            server.requests.append(f"GET {self.path}")
            if self.path == "/v1/models":
                self._reply(*server.models_answer())
            else:
                self._reply(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            server.requests.append(f"POST {self.path}")
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self._reply(*server.chat(body))

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


@contextmanager
def serving(server: OpenServer, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """The server on `port` (0: a free loopback port); yields its base_url."""
    http = ThreadingHTTPServer((host, port), _handler(server))
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{http.server_address[1]}/v1"
    finally:
        http.shutdown()
        http.server_close()
