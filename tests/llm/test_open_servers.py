"""Self-hosted servers as they are (issue 20): the preflight, the image limit met mid-run, a context
overflow, through the real openai SDK against loopback stubs that answer as vLLM, Ollama and
llama.cpp do (tests/llm/open_server.py)."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from giant.agent.modes import parse_agent
from giant.errors import ConfigError
from giant.eval.context_fit import check_server, image_need
from giant.llm.config import provider_settings
from giant.llm.preflight import ImageNeed, preflight
from giant.llm.providers.openai_compatible import OpenAICompatibleSettings
from giant.llm.providers.openai_compatible.provider import OpenAICompatibleProvider
from giant.record import RESULTS_FILE, read_results
from giant.record.summary import Summary
from tests.eval.runner_fixtures import SLIDES, evaluate, make_items, write_slides
from tests.llm.open_server import OpenServer, serving

QWEN = "Qwen/Qwen2.5-VL-7B-Instruct"
T20 = parse_agent({"mode": "giant", "max_steps": 20, "crop_size": 1000})
NEED_20 = image_need(T20)


def settings(base_url: str, model: str = QWEN, **extra: object) -> OpenAICompatibleSettings:
    cfg = provider_settings("openai_compatible", model=model, base_url=base_url, **extra)
    assert isinstance(cfg, OpenAICompatibleSettings)
    return cfg


def test_the_agent_sends_t_images_at_most_capped_by_max_images_in_context() -> None:
    assert image_need(T20) == ImageNeed(20, 20, None)
    capped = parse_agent({"mode": "giant", "max_steps": 20, "crop_size": 1000, "max_images_in_context": 6})
    assert image_need(capped).images == 6
    assert image_need(parse_agent({"mode": "thumbnail"})).images == 1


@pytest.mark.parametrize("flavour", ["vllm", "vllm_new"])
def test_a_vllm_server_taking_one_image_stops_the_run_in_two_requests(flavour: str) -> None:
    server = OpenServer(flavour, image_limit=1)
    with serving(server) as base_url, pytest.raises(ConfigError) as err:
        preflight(settings(base_url), NEED_20)
    assert server.requests == ["GET /v1/models", "POST /v1/chat/completions"]
    assert str(err.value) == (
        f"provider.base_url={base_url} takes at most 1 image(s) per prompt, but the agent sends up to 20 "
        "(agent.max_steps=20, agent.max_images_in_context=null); restart the server with vllm serve "
        f"{QWEN} --limit-mm-per-prompt '{{\"image\": 20}}'"
    )


def test_a_lower_limit_names_the_context_cap_that_fits() -> None:
    server = OpenServer("vllm_new", image_limit=8)
    with serving(server) as base_url, pytest.raises(ConfigError) as err:
        preflight(settings(base_url), NEED_20)
    assert str(err.value).endswith(
        f"vllm serve {QWEN} --limit-mm-per-prompt '{{\"image\": 20}}', or set agent.max_images_in_context=8"
    )
    assert len(server.requests) == 2


def test_a_server_that_takes_the_images_passes_and_reports_its_context() -> None:
    server = OpenServer("vllm", image_limit=999, max_model_len=32768)
    with serving(server) as base_url:
        facts = preflight(settings(base_url), NEED_20)
    assert (facts.server, facts.max_model_len, facts.models) == ("vllm", 32768, (QWEN,))
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("flavour", "said"),
    [
        ("ollama", 'model "llava" not found, try pulling it first'),
        ("vllm", "The model `llava` does not exist."),
    ],
)
def test_an_unknown_model_is_one_line_listing_the_served_ones(flavour: str, said: str) -> None:
    """The list is evidence; the chat request's 404 is the verdict, and the line lists what is served."""
    server = OpenServer(flavour, models=("qwen2.5vl:7b", "gemma3:12b"))
    with serving(server) as base_url, pytest.raises(ConfigError) as err:
        preflight(settings(base_url, model="llava"), NEED_20)
    assert str(err.value) == (
        f"provider.model=llava is not served at provider.base_url={base_url} ({said}); it serves: "
        "qwen2.5vl:7b, gemma3:12b (pass one of them as provider.model)"
    )
    assert server.requests == ["GET /v1/models", "POST /v1/chat/completions"]
    assert server.bodies[0]["model"] == "llava"
    with serving(server) as base_url:  # an Ollama tag without ":latest" is the same model
        facts = preflight(settings(base_url, model="qwen2.5vl:7b"), NEED_20)
        assert facts.server == flavour and facts.unconfirmed == ()


@pytest.mark.parametrize(
    ("reply", "doubt"),
    [
        ("500", "GET /v1/models (Internal Server Error)"),
        ("empty", "GET /v1/models lists no model"),
        ("renamed", f"GET /v1/models does not list provider.model={QWEN}"),
    ],
)
def test_a_model_list_that_fails_or_names_otherwise_leaves_the_verdict_to_the_image_request(
    reply: str, doubt: str
) -> None:
    """transformers serve 5.18 answers GET /v1/models with 500 without its cache folder and lists only
    cached models: the image request proves the model is served and takes the images."""
    server = OpenServer("ollama", models=(QWEN,), models_reply=reply)
    with serving(server) as base_url:
        facts = preflight(settings(base_url), NEED_20)
    assert server.requests == ["GET /v1/models", "POST /v1/chat/completions"]
    assert facts.unconfirmed == (doubt,) and facts.max_model_len is None
    images = [p for p in server.bodies[0]["messages"][0]["content"] if p["type"] == "image_url"]
    assert len(images) == 20


@pytest.mark.parametrize("reply", ["500", "empty"])
def test_a_refused_model_name_still_stops_after_an_unhelpful_list(reply: str) -> None:
    server = OpenServer("ollama", models=(QWEN,), models_reply=reply)
    with serving(server) as base_url, pytest.raises(ConfigError) as err:
        preflight(settings(base_url, model="llava"), NEED_20)
    assert str(err.value) == (
        f'provider.model=llava is not served at provider.base_url={base_url} (model "llava" not found, '
        "try pulling it first); it serves: nothing it lists (check provider.model against the server's log)"
    )
    assert len(server.requests) == 2


@pytest.mark.parametrize("reply", ["500", "empty"])
def test_an_image_limit_still_stops_after_an_unhelpful_list(reply: str) -> None:
    server = OpenServer("vllm_new", image_limit=4, models_reply=reply)
    with serving(server) as base_url, pytest.raises(ConfigError) as err:
        preflight(settings(base_url), NEED_20)
    assert str(err.value).startswith(f"provider.base_url={base_url} takes at most 4 image(s) per prompt")
    assert len(server.requests) == 2


def test_what_could_not_be_confirmed_is_one_line_and_the_setting_fills_the_context(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Holder:
        max_model_len: int | None = None

    server = OpenServer("ollama", models=(QWEN,), models_reply="500")
    with serving(server) as base_url, caplog.at_level("WARNING", logger="giant.eval.context_fit"):
        check_server(settings(base_url), T20, Holder())
        check_server(settings(base_url, max_model_len=16384), T20, holder := Holder())
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("preflight:")]
    assert lines == [
        f"preflight: {base_url} answered provider.model={QWEN} with 20 image(s); not confirmed: GET "
        "/v1/models (Internal Server Error); the context length (unknown: set provider.max_model_len to "
        "check prompts against it)",
        f"preflight: {base_url} answered provider.model={QWEN} with 20 image(s); not confirmed: GET "
        "/v1/models (Internal Server Error); the context length (provider.max_model_len=16384 is used)",
    ]
    assert holder.max_model_len == 16384


def test_a_vllm_that_lists_the_model_and_its_context_leaves_nothing_unconfirmed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = OpenServer("vllm", max_model_len=16384)
    with serving(server) as base_url, caplog.at_level("WARNING", logger="giant.eval.context_fit"):
        check_server(settings(base_url), T20, object.__new__(type("H", (), {"max_model_len": None})))
    assert not [r for r in caplog.records if r.getMessage().startswith("preflight:")]


def test_llama_cpp_serves_its_one_model_under_any_name() -> None:
    server = OpenServer("llamacpp", models=("qwen2.5-vl-7b-instruct-q4_k_m.gguf",))
    with serving(server) as base_url:
        facts = preflight(settings(base_url), NEED_20)
    assert facts.server == "llamacpp" and facts.max_model_len is None
    assert len(server.requests) == 2


def test_a_refusal_in_other_words_costs_a_third_request_that_tells_one_image_from_none() -> None:
    server = OpenServer("ollama", models=(QWEN,), image_limit=1)
    with serving(server) as base_url, pytest.raises(ConfigError) as err:
        preflight(settings(base_url), NEED_20)
    assert len(server.requests) == 3
    message = str(err.value)
    assert message.startswith(f"provider.base_url={base_url} takes one image per prompt but refused 20")
    assert "\n" not in message and "--limit-mm-per-prompt" in message


def test_a_server_that_is_not_up_is_one_line() -> None:
    with pytest.raises(ConfigError, match=r"cannot reach provider.base_url=http://127.0.0.1:9/v1"):
        preflight(settings("http://127.0.0.1:9/v1"), NEED_20)


def test_preflight_false_asks_nothing() -> None:
    server = OpenServer("vllm", image_limit=1)
    with serving(server) as base_url:
        check_server(settings(base_url, preflight=False), T20, object())
    assert server.requests == []


def test_check_server_keeps_the_served_context_on_the_provider() -> None:
    server = OpenServer("vllm", max_model_len=16384)

    class Holder:
        max_model_len: int | None = None

    holder = Holder()
    with serving(server) as base_url:
        check_server(settings(base_url), T20, holder)
    assert holder.max_model_len == 16384


# ----------------------------------------------------------------------------- during the run

T2 = parse_agent({"mode": "giant", "max_steps": 2, "crop_size": 256})


@pytest.fixture(scope="module")
def wsi_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_slides(tmp_path_factory.mktemp("wsi"), SLIDES)


def _run(base_url: str, wsi_root: Path, out: Path, n_items: int) -> Summary:
    async def go() -> Summary:
        provider = OpenAICompatibleProvider(settings(base_url, max_retries=0))
        return await evaluate(make_items(n_items, SLIDES), wsi_root, provider, out, agent=T2, concurrency=1)

    return asyncio.run(go())


def test_a_server_that_starts_refusing_images_mid_run_halts_it(wsi_root: Path, tmp_path: Path) -> None:
    # Item 1 answers (calls 1, 2); item 2's second call carries 2 images after a restart with a limit of 1.
    server = OpenServer("vllm", image_limit=1, refuse_images_from=3)
    with serving(server) as base_url:
        summary = _run(base_url, wsi_root, tmp_path, 6)
    assert server.chats == 4  # no later item started
    assert summary.setup_failure.startswith("stopped at the first image_limit error")
    assert "--limit-mm-per-prompt" in summary.setup_failure and not summary.complete
    records = read_results(tmp_path / RESULTS_FILE)
    assert [(r.status, r.cause) for r in records] == [("answered", None), ("provider_error", "image_limit")]


@pytest.mark.parametrize("flavour", ["vllm", "llamacpp"])
def test_a_context_overflow_ends_the_item_with_its_cause_and_the_knobs(
    wsi_root: Path, tmp_path: Path, flavour: str
) -> None:
    server = OpenServer(flavour, models=(QWEN,), max_model_len=8192, context_from=3)
    with serving(server) as base_url:
        _run(base_url, wsi_root, tmp_path, 2)
    first, second = read_results(tmp_path / RESULTS_FILE)
    assert (first.status, first.cause) == ("answered", None)
    assert (second.status, second.cause) == ("context_exceeded", "context")
    assert "the request exceeds the model's context (max_model_len 8192" in second.reason
    assert "agent.max_images_in_context" in second.reason and "agent.crop_size" in second.reason


class _NotJson(BaseHTTPRequestHandler):
    """Answers 200 to everything with `body` (a web page, a proxy's notice, or nothing), except a
    proper model list when `list_ok`: the chat request then meets the odd body."""

    body = b""
    content_type = "application/json"
    list_ok = False

    def _answer(self) -> None:
        if self.list_ok and self.path.endswith("/models"):
            body, kind = (
                json.dumps({"object": "list", "data": [{"id": QWEN, "object": "model"}]}).encode(),
                ("application/json"),
            )
        else:
            body, kind = self.body, self.content_type
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize(
    ("body", "content_type", "list_ok", "what"),
    [
        (b"<html>Welcome to nginx</html>", "application/json", False, "GET /models"),
        (b"<html>Welcome to nginx</html>", "text/html", False, "GET /models"),
        (b"", "application/json", False, "GET /models"),
        (b"<html>Welcome to nginx</html>", "application/json", True, "POST /chat/completions"),
        (b"", "application/json", True, "POST /chat/completions"),
        (b"not json", "text/plain", True, "POST /chat/completions"),
    ],
)
def test_a_200_whose_body_is_not_json_is_one_line_naming_the_server(
    body: bytes, content_type: str, list_ok: bool, what: str
) -> None:
    """Before: json.JSONDecodeError out of the SDK, a traceback."""
    handler = type("Handler", (_NotJson,), {"body": body, "content_type": content_type, "list_ok": list_ok})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        with pytest.raises(ConfigError) as info:
            preflight(settings(base_url), NEED_20)
    finally:
        server.shutdown()
        server.server_close()
    message = str(info.value)
    assert message.startswith(f"provider.base_url={base_url} answered {what} with a 200 that is not"), message
    assert "(it usually ends in /v1)" in message and "\n" not in message
