"""Ask a self-hosted OpenAI-compatible server, before any item starts, whether the run can work.

A vLLM server started without room for the agent's images answers every item's second call with a
400, and each item would end as a provider error: an hour of GPU time for a table of zeros. Two or
three cheap requests tell first: `GET /v1/models` (evidence: the model is listed; vLLM also reports
`max_model_len`), then one tiny request carrying as many small images as the agent will send at most
(the proof: the model answers under that name and takes the images). A server that takes fewer
stops the run with one line naming the fix (a ConfigError, exit 2). The limit is read from the
server's own 400 ("At most N image(s) may be provided in one prompt."), never assumed: vLLM's
default changed across versions and models differ.

The model list is evidence, not a gate: servers list differently (`transformers serve` 5.18 answers
500 when its Hugging Face cache folder is missing and lists cached models, not the one it serves).
A list that fails, is empty or names the model otherwise leaves the verdict to the image request;
what could not be confirmed is kept in `ServerFacts.unconfirmed` for the run's one line. Only a
server that cannot be reached at all, or a chat request that refuses the model name, stops the run
before the image request says more.

A sync client of its own: the run's async client is bound to the event loop the run will use.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from typing import Any

import openai
from openai.pagination import SyncPage
from openai.types.chat import ChatCompletion

from giant.errors import ConfigError
from giant.llm.providers.openai_compatible import OpenAICompatibleSettings
from giant.llm.sdk_errors import IMAGE_LIMIT, cause_of, redact

PROBE_SIDE = 64  # px: above every processor's minimum, a handful of tokens each
PROBE_TIMEOUT_S = 120.0  # a first request may wait for the model to warm up; a run's calls wait longer
_NO_KEY = "not-needed"
_FIXES = {
    "key": "the server wants a key: name its variable in provider.api_key_env",
    "server": "the server failed (5xx): check its log; a model still loading answers later",
    "context": "the server's context is too small even for the probe: raise its --max-model-len",
}


@dataclass(frozen=True)
class ServerFacts:
    """What the preflight learned: the served ids, the server kind (from `owned_by`), the context,
    and what the model list could not confirm (why, in a few words each)."""

    models: tuple[str, ...]
    server: str  # vllm | ollama | llamacpp | unknown
    max_model_len: int | None  # vLLM reports it; None elsewhere
    unconfirmed: tuple[str, ...] = ()  # e.g. "GET /v1/models (Internal Server Error)"


@dataclass(frozen=True)
class ImageNeed:
    """How many images one prompt of this run carries at most, and the agent settings behind it, so
    the message can name them."""

    images: int
    max_steps: int
    max_images_in_context: int | None


def probe_image() -> dict[str, Any]:
    """A tiny white JPEG as a Chat Completions image part."""
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (PROBE_SIDE, PROBE_SIDE), "white").save(out, format="JPEG")
    url = "data:image/jpeg;base64," + base64.b64encode(out.getvalue()).decode()
    return {"type": "image_url", "image_url": {"url": url}}


def preflight(cfg: OpenAICompatibleSettings, need: ImageNeed, *, http_client: Any = None) -> ServerFacts:
    """At most 3 requests; returns what the server said, or raises ConfigError with the one line."""
    key = cfg.api_key()
    client = openai.OpenAI(
        api_key=key or _NO_KEY,
        base_url=cfg.base_url,
        max_retries=0,
        timeout=min(cfg.client_timeout_s(), PROBE_TIMEOUT_S),
        http_client=http_client,
    )
    facts = served(client, cfg, key)
    _probe_images(client, cfg, need, key, facts)
    return facts


def served(client: openai.OpenAI, cfg: OpenAICompatibleSettings, key: str) -> ServerFacts:
    """Request 1: the served models, as evidence. Only an unreachable server raises (the image
    request would fail the same way); a refused, empty or otherwise-named list is kept in
    `unconfirmed` and the image request decides."""
    try:
        page = client.models.list()
    except openai.OpenAIError as exc:
        if cause_of(exc) == "network":
            raise ConfigError(_refused(cfg, "GET /models", exc, key)) from None
        return ServerFacts((), "unknown", None, (f"GET /v1/models ({redact(_text(exc), key)[:120]})",))
    except (ValueError, AttributeError, TypeError) as exc:
        # a 200 body that is not JSON (an HTML page, nothing): the SDK's json.loads fails, or it hands
        # the text on as a str to a page object that cannot take it
        raise ConfigError(not_json_line(cfg, "GET /models", exc)) from None
    if not isinstance(page, SyncPage):
        raise ConfigError(not_json_line(cfg, "GET /models", TypeError(f"a {type(page).__name__}")))
    entries = list(page.data)
    ids = tuple(str(entry.id) for entry in entries)
    owners = {str(getattr(entry, "owned_by", "") or "") for entry in entries}
    server: str | None = next((kind for kind in ("vllm", "llamacpp") if kind in owners), None)
    if server is None:
        server = "ollama" if owners & {"library", "ollama"} else "unknown"
    entry = next((e for e in entries if e.id in (cfg.model, f"{cfg.model}:latest")), None)
    if entry is None and server != "llamacpp":
        what = "lists no model" if not ids else f"does not list provider.model={cfg.model}"
        return ServerFacts(ids, server, None, (f"GET /v1/models {what}",))
    extra = (entry.model_extra or {}) if entry is not None else {}
    limit = extra.get("max_model_len")
    return ServerFacts(ids, server, int(limit) if isinstance(limit, int) else None)


def not_served_line(cfg: OpenAICompatibleSettings, facts: ServerFacts, said: str) -> str:
    """The one line for a model name the server refuses, listing what it does serve if it said."""
    ids = facts.models
    listed = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
    fix = "pass one of them as provider.model" if ids else "check provider.model against the server's log"
    return (
        f"provider.model={cfg.model} is not served at provider.base_url={cfg.base_url} ({said[:200]}); "
        f"it serves: {listed or 'nothing it lists'} ({fix})"
    )


def _probe_images(
    client: openai.OpenAI, cfg: OpenAICompatibleSettings, need: ImageNeed, key: str, facts: ServerFacts
) -> None:
    """Request 2: the most images the agent sends, one token of reply. Refused without the server's
    limit in its words (another server's wording), request 3 sends one image to tell "takes fewer"
    from "takes none". A refused model name stops here, whatever the list said."""
    error = _ask(client, cfg, need.images)
    if error is None:
        return
    text = _text(error)
    if cause_of(error) == "model_name":
        raise ConfigError(not_served_line(cfg, facts, redact(text, key)))
    found = IMAGE_LIMIT.search(text)
    if found:
        raise ConfigError(image_limit_line(cfg, need, int(found.group(1)), facts))
    if need.images > 1 and cause_of(error) == "bad_request" and _ask(client, cfg, 1) is None:
        raise ConfigError(
            f"provider.base_url={cfg.base_url} takes one image per prompt but refused {need.images} "
            f"({redact(text, key)[:300]}); {_fix(cfg, need, 1, facts)}"
        )
    raise ConfigError(_refused(cfg, f"a request with {need.images} small image(s)", error, key))


def _ask(client: openai.OpenAI, cfg: OpenAICompatibleSettings, images: int) -> openai.OpenAIError | None:
    content: list[dict[str, Any]] = [{"type": "text", "text": "Reply with OK."}]
    content += [probe_image()] * images
    messages: Any = [{"role": "user", "content": content}]  # the SDK's TypedDicts, built by hand
    try:
        reply = client.chat.completions.create(
            model=cfg.model,
            messages=messages,
            max_tokens=1,
        )
    except openai.APIResponseValidationError as exc:  # a 200 the SDK could not read as a completion
        raise ConfigError(not_json_line(cfg, "POST /chat/completions", exc)) from None
    except openai.OpenAIError as exc:
        return exc
    except ValueError as exc:  # the SDK's json.loads of a 200 body that is not JSON
        raise ConfigError(not_json_line(cfg, "POST /chat/completions", exc)) from None
    if not isinstance(reply, ChatCompletion):  # a body that is not JSON, handed on as text
        raise ConfigError(
            not_json_line(cfg, "POST /chat/completions", TypeError(f"a {type(reply).__name__}"))
        )
    return None


def not_json_line(cfg: OpenAICompatibleSettings, what: str, exc: Exception) -> str:
    """The one line for a 200 whose body is not the JSON an OpenAI-compatible API sends: a web page or a
    proxy at that address, or a path without the API's /v1."""
    said = str(exc).replace("\n", " ")[:120]
    return (
        f"provider.base_url={cfg.base_url} answered {what} with a 200 that is not an OpenAI-compatible "
        f"JSON body ({type(exc).__name__}: {said}); point provider.base_url at the server's API (it "
        "usually ends in /v1), not at a web page or proxy"
    )


def image_limit_line(cfg: OpenAICompatibleSettings, need: ImageNeed, limit: int, facts: ServerFacts) -> str:
    """The one line for a server that takes fewer images than the agent sends."""
    return (
        f"provider.base_url={cfg.base_url} takes at most {limit} image(s) per prompt, but the agent sends "
        f"up to {need.images} (agent.max_steps={need.max_steps}, agent.max_images_in_context="
        f"{'null' if need.max_images_in_context is None else need.max_images_in_context}); "
        + _fix(cfg, need, limit, facts)
    )


def _fix(cfg: OpenAICompatibleSettings, need: ImageNeed, limit: int, facts: ServerFacts) -> str:
    server = (
        f"restart the server with vllm serve {cfg.model} --limit-mm-per-prompt '{{\"image\": {need.images}}}'"
        if facts.server in ("vllm", "unknown")
        else f"serve the model where a prompt may carry {need.images} images (vLLM: --limit-mm-per-prompt)"
    )
    # One image left would be the overview alone: the crops would never be seen.
    fewer = f", or set agent.max_images_in_context={limit}" if limit >= 2 else ""
    return server + fewer


def _refused(cfg: OpenAICompatibleSettings, what: str, exc: openai.OpenAIError, key: str) -> str:
    cause = cause_of(exc)
    if cause == "network":
        return (
            f"cannot reach provider.base_url={cfg.base_url} ({type(exc).__name__}); start the server "
            "(docs/open-models.md) or fix provider.base_url"
        )
    fix = _FIXES.get(cause or "", "fix what the server names, or skip this check: provider.preflight=false")
    return f"provider.base_url={cfg.base_url} refused {what} ({redact(_text(exc), key)[:300]}); {fix}"


def _text(exc: openai.OpenAIError) -> str:
    """The server's message: vLLM, Ollama and llama.cpp put it in error.message or message;
    FastAPI servers (transformers serve) in detail."""
    body: Any = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = (inner.get("message") or inner.get("detail")) if isinstance(inner, dict) else inner
        if message:
            return str(message).replace("\n", " ")
    return str(exc).replace("\n", " ")
