"""SDK exceptions -> our typed provider errors, with secrets scrubbed and the cause named.

The SDK clients are built with `max_retries=0`: giant.llm.retry is the one layer that asks again, and
it can only decide well if the error says what went wrong. A refused key, an unknown model and a
used-up quota (OpenAI's 429 `insufficient_quota`, which is not a rate limit) are fatal and stop the
run; a rate limit, a 5xx or a dropped connection is transient and is retried with backoff.
"""

from __future__ import annotations

import re
from typing import Any

import anthropic
import openai

from giant.core import TRANSIENT_CAUSES, SetupCause
from giant.llm.types import FatalProviderError, ProviderError, TransientError
from giant.retry import retry_after_s as read_retry_after

_KEY_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_\-*]{3,}|key-[A-Za-z0-9_\-*]{8,})")
_MAX_MESSAGE = 400
# Billing, not pacing: waiting will not help (OpenAI's 429 code; Anthropic's 400 on a spent balance).
_QUOTA = re.compile(r"insufficient_quota|exceeded your current quota|credit balance is too low", re.I)
# A request larger than the model's window (OpenAI, vLLM old and new, llama.cpp, Anthropic wordings).
_CONTEXT = re.compile(
    r"context_length_exceeded|maximum context length|maximum model length|prompt is too long|"
    r"context window|exceed_context_size|exceeds the available context size",
    re.I,
)
# A server that takes fewer images per prompt than were sent (vLLM's --limit-mm-per-prompt): the same
# for every later request of the run, so the run stops rather than score items it cannot show.
IMAGE_LIMIT = re.compile(r"at most (\d+) image\(?s?\)? may be provided", re.I)
# OpenAI flex processing out of capacity: a 429 "Resource Unavailable", not the account's rate limit.
_FLEX_BUSY = re.compile(r"resource.?unavailable|capacity", re.I)
# A model flex processing does not serve: a 400 "Unsupported service_tier: flex".
_FLEX_UNSUPPORTED = re.compile(r"service.?tier", re.I)
# transformers serve started for one model answers any other name with a 400 "Server is pinned to".
_MODEL = re.compile(
    r"model_not_found|does not exist|not_found_error.*model|unknown model|model .*not found|is pinned to",
    re.I,
)


def redact(text: str, secret: str | None) -> str:
    """Remove the key itself and anything shaped like a key (servers echo masked keys back)."""
    if secret:
        text = text.replace(secret, "***")
    return _KEY_PATTERN.sub("***", text)


def _body_text(exc: Exception) -> str:
    """The error's code, type and message as the server sent them, for the patterns above."""
    parts = [str(getattr(exc, name, "") or "") for name in ("code", "type")]
    body: Any = getattr(exc, "body", None)
    return " ".join([*parts, str(body), str(exc)])


def cause_of(exc: Exception) -> SetupCause | None:
    """What the user would have to fix for this call to work; None when the SDK error says nothing."""
    if isinstance(exc, openai.APIConnectionError | anthropic.APIConnectionError):
        return "network"  # timeouts are connection errors in both SDKs
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        return None
    text = _body_text(exc)
    if _QUOTA.search(text):
        return "quota"
    if status in (401, 403):
        return "key"
    if status == 400 and IMAGE_LIMIT.search(text):
        return "image_limit"
    if status == 400 and _FLEX_UNSUPPORTED.search(text):
        return "flex_unsupported"
    if status == 404 or (status == 400 and _MODEL.search(text)):
        return "model_name"
    if status == 429 and _FLEX_BUSY.search(text):
        return "flex_capacity"
    if status in (408, 409, 429):
        return "rate_limit"
    if status >= 500:
        return "server"
    if _CONTEXT.search(text):
        return "context"
    return "bad_request"


def retry_after_s(exc: Exception) -> float | None:
    """The pause the server asked for, read from the SDK error's HTTP response when it has one."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    return None if headers is None else read_retry_after(headers)


def unreadable_reply(provider: str, what: str) -> TransientError:
    """A reply the server sent as a success (200) that is no reply: a body that is not JSON, an empty
    body, HTML from a proxy. The server's fault, not the model's: retried like a 5xx (cause `server`),
    and never kept in the ledger, so a rerun asks again instead of replaying it."""
    return TransientError(
        f"{provider}: the server answered 200 with {what[:200]}; treated as a server error", cause="server"
    )


def classify(exc: Exception, *, provider: str, secret: str | None) -> ProviderError:
    """Transient (retried): rate limit, timeout, connection, 5xx. Fatal: the rest, each with its cause
    (key, model_name, quota, context, bad_request), so the runner can tell a setup it must stop for
    from an item the server would not take."""
    message = redact(f"{provider}: {type(exc).__name__}: {exc}", secret).replace("\n", " ")[:_MAX_MESSAGE]
    cause = cause_of(exc)
    if cause in TRANSIENT_CAUSES:
        return TransientError(message, cause=cause, retry_after_s=retry_after_s(exc))
    return FatalProviderError(message, cause=cause)


SDK_ERRORS: tuple[type[Exception], ...] = (openai.OpenAIError, anthropic.AnthropicError)
