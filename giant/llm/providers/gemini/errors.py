"""google-genai errors -> our typed provider errors, and Gemini's flex tier with its own retries.

The google-genai client is built with one attempt per request (giant.llm.providers.gemini.provider):
giant.llm.retry is the one layer that asks again, so the cause must be read here from what Google
sends, a status code, a status name and `details` (google.rpc types):
- a refused key: 400 with ErrorInfo reason API_KEY_INVALID (or another API_KEY_* reason), 401, 403;
- an unknown model: 404 NOT_FOUND;
- 429 RESOURCE_EXHAUSTED is both a rate limit and a spent quota. A QuotaFailure violation whose
  quotaId names a per-day quota (GenerateRequestsPerDayPerProjectPerModel...) is spent until the day
  resets: `quota`, never retried; a per-minute one is a rate limit, retried after RetryInfo's delay;
- 500, 503 UNAVAILABLE (overload) and 504 are transient (`server`), as is a dropped connection.
Flex calls (`service_tier: flex`) may be shed under load: a 503 under flex is `FlexShed`, retried
with its own budget (provider.flex_retries), then per provider.flex_fallback sent at the standard
tier or asked again, as OpenAI's flex is (giant.llm.providers.openai.flex).
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import httpx2
from google.genai import errors as genai_errors

from giant.core import TRANSIENT_CAUSES, SetupCause
from giant.llm.sdk_errors import redact
from giant.llm.types import FatalProviderError, ProviderError, TransientError
from giant.retry import RetryPolicy

_MAX_MESSAGE = 400
_PER_DAY = re.compile(r"per.?day|daily", re.I)
_CONTEXT = re.compile(r"input token count.*exceeds|exceeds the maximum number of tokens", re.I)
_MODEL = re.compile(r"models/\S+ is not found|is not supported for generatecontent|unknown model", re.I)
_TIER = re.compile(r"service.?tier", re.I)
_DELAY = re.compile(r"^(\d+(?:\.\d+)?)s$")

# Connection failures: httpx2's, and those of the SDK's default async transport (aiohttp), which are
# told by their module so that giant never imports an HTTP client of its own beside httpx2.
_CONNECTION: tuple[type[BaseException], ...] = (httpx2.TransportError, asyncio.TimeoutError)


def _is_connection_error(exc: BaseException) -> bool:
    return isinstance(exc, _CONNECTION) or type(exc).__module__.split(".")[0] == "aiohttp"


def _details(exc: genai_errors.APIError) -> list[dict[str, Any]]:
    body = exc.details if isinstance(exc.details, dict) else {}
    error = body.get("error", body)
    found = error.get("details") if isinstance(error, dict) else None
    return [d for d in found or [] if isinstance(d, dict)]


def _of_type(details: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [d for d in details if str(d.get("@type", "")).endswith(f".{name}")]


def spent_quota(exc: genai_errors.APIError) -> bool:
    """A 429 whose QuotaFailure names a per-day quota: waiting minutes will not help."""
    violations = [v for d in _of_type(_details(exc), "QuotaFailure") for v in d.get("violations") or []]
    return any(_PER_DAY.search(f"{v.get('quotaId', '')} {v.get('quotaMetric', '')}") for v in violations)


def retry_delay_s(exc: genai_errors.APIError) -> float | None:
    """RetryInfo's retryDelay ("34s"), the pause Google asks for before the next request."""
    for info in _of_type(_details(exc), "RetryInfo"):
        match = _DELAY.match(str(info.get("retryDelay", "")))
        if match:
            return float(match[1])
    return None


_PER_MINUTE = re.compile(r"per.?minute", re.I)


def quota_limits(exc: genai_errors.APIError) -> dict[str, float] | None:
    """The per-minute limits a 429's QuotaFailure names (quotaId and quotaValue), by pacer kind
    (giant.llm.pacer): Gemini sends no rate-limit headers, so this is how its limits become known."""
    found: dict[str, float] = {}
    for detail in _of_type(_details(exc), "QuotaFailure"):
        for violation in detail.get("violations") or []:
            quota = f"{violation.get('quotaId', '')} {violation.get('quotaMetric', '')}"
            try:
                value = float(violation.get("quotaValue", ""))
            except (TypeError, ValueError):
                continue
            if not _PER_MINUTE.search(quota) or value <= 0:
                continue
            kind = "requests" if re.search(r"request", quota, re.I) else None
            if kind is None and re.search(r"token", quota, re.I):
                kind = "input_tokens" if re.search(r"input", quota, re.I) else "tokens"
            if kind is not None:
                found[kind] = min(value, found.get(kind, value))
    return found or None


def cause_of(exc: genai_errors.APIError) -> SetupCause:
    code, status = exc.code, str(exc.status or "")
    reasons = {str(d.get("reason", "")) for d in _of_type(_details(exc), "ErrorInfo")}
    text = f"{status} {exc.message or ''}"
    if any(reason.startswith("API_KEY") for reason in reasons) or code in (401, 403):
        return "key"
    if code == 404 or (code == 400 and _MODEL.search(text)):
        return "model_name"
    if code == 429:
        return "quota" if spent_quota(exc) else "rate_limit"
    if code == 400 and _TIER.search(text):
        return "flex_unsupported"
    if code == 400 and _CONTEXT.search(text):
        return "context"
    if code in (408, 409):
        return "rate_limit"
    if code >= 500:
        return "server"
    return "bad_request"


def classify(exc: BaseException, *, secret: str | None) -> ProviderError:
    """A google-genai error or a dropped connection as the typed error giant.llm.retry acts on."""
    message = redact(f"gemini: {type(exc).__name__}: {exc}", secret).replace("\n", " ")[:_MAX_MESSAGE]
    if not isinstance(exc, genai_errors.APIError):
        return TransientError(message, cause="network")
    cause = cause_of(exc)
    if cause in TRANSIENT_CAUSES:
        limits = quota_limits(exc) if cause == "rate_limit" else None
        return TransientError(message, cause=cause, retry_after_s=retry_delay_s(exc), limits=limits)
    return FatalProviderError(message, cause=cause)


async def sdk_call(work: Awaitable[Any], *, secret: str | None) -> Any:
    """Await an SDK call; its errors leave as ProviderErrors (the runtime's one retry layer)."""
    try:
        return await work
    except genai_errors.APIError as exc:
        raise classify(exc, secret=secret) from None
    except Exception as exc:
        if not _is_connection_error(exc):
            raise
        raise classify(exc, secret=secret) from None


# ----------------------------------------------------------------------------- flex


class FlexShed(Exception):
    """A flex call the server shed (503 under service_tier flex), apart from the ordinary retries."""

    def __init__(self, error: genai_errors.APIError) -> None:
        super().__init__(str(error))
        self.error = error


def _asked(exc: BaseException) -> float | None:
    return retry_delay_s(exc.error) if isinstance(exc, FlexShed) else None


# Shed capacity comes back over minutes: a longer ceiling than the rate-limit backoff (as OpenAI's flex).
_FLEX_RETRY = RetryPolicy(retryable=(FlexShed,), asked=_asked, max_s=60.0)


async def send_flex(
    create: Callable[[str], Awaitable[Any]],
    *,
    model: str,
    retries: int,
    fallback: Literal["wait", "standard"],
    secret: str | None,
) -> tuple[Any, str]:
    """`create("flex")`, asked again while flex sheds it; then per `fallback` once more with
    `create("standard")`. Returns the reply and the tier it was sent at. Other errors leave as
    ProviderErrors."""

    async def flex() -> Any:
        try:
            return await create("flex")
        except genai_errors.APIError as exc:
            if exc.code == 503:
                raise FlexShed(exc) from None
            error = classify(exc, secret=secret)
            if error.cause == "flex_unsupported":
                said = redact(str(exc), secret).replace("\n", " ")[:200]
                raise FatalProviderError(
                    f"provider.service_tier=flex is not available for model {model} (the server answered: "
                    f"{said})",
                    cause="flex_unsupported",
                ) from None
            raise error from None
        except Exception as exc:
            if not _is_connection_error(exc):
                raise
            raise classify(exc, secret=secret) from None

    attempts = retries if fallback == "standard" else sys.maxsize - 1  # wait: until the item's timeout
    try:
        return await _FLEX_RETRY.call_async(flex, attempts), "flex"
    except FlexShed:
        return await sdk_call(create("standard"), secret=secret), "standard"
