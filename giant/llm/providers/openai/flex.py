"""OpenAI flex processing: the same Responses call with `service_tier: "flex"`, billed at half price.

Flex is slower and, when it is short of capacity, answers 429 "Resource Unavailable" (not billed).
That is not the account's rate limit, so it gets its own retries here (`provider.flex_retries`, with
the shared backoff of giant.retry) and never uses up the ordinary ones of giant.llm.retry, which see
only what leaves this module. When they run out, `provider.flex_fallback` decides: `wait` keeps
asking flex, `standard` sends that one call without the tier and pays the standard price. Which tier
billed a reply is read from the reply's own `service_tier`, so the record and the cost follow it.

A model flex does not serve answers 400 ("Unsupported service_tier: flex"): no list of models is kept
here, the server's first answer says it, and the run stops on one line naming the setting and model.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import openai

from giant.llm.sdk_errors import cause_of, redact, retry_after_s
from giant.llm.types import FatalProviderError, Tier
from giant.retry import RetryPolicy

FLEX = "flex"
STANDARD_WIRE = "default"  # what the Responses API calls the standard tier in a reply


class FlexBusy(Exception):
    """A flex "resource unavailable" 429, held apart from the errors the ordinary retries see."""

    def __init__(self, error: openai.APIStatusError) -> None:
        super().__init__(str(error))
        self.error = error


def _asked(exc: BaseException) -> float | None:
    return retry_after_s(exc.error) if isinstance(exc, FlexBusy) else None


# Capacity comes back over minutes, not seconds: a longer ceiling than the rate-limit backoff.
_FLEX_RETRY = RetryPolicy(retryable=(FlexBusy,), asked=_asked, max_s=60.0)


def unsupported_line(model: str, error: Exception, secret: str | None) -> str:
    said = redact(str(error), secret).replace("\n", " ")[:200]
    return f"provider.service_tier=flex is not available for model {model} (the server answered: {said})"


async def send_flex(
    create: Callable[[dict[str, Any]], Awaitable[Any]],
    request: dict[str, Any],
    *,
    model: str,
    retries: int,
    fallback: Literal["wait", "standard"],
    secret: str | None,
) -> Any:
    """`create(request)` at the flex tier, asked again while flex is out of capacity; then, per
    `fallback`, once more at the standard tier. Other SDK errors leave as they came."""

    async def flex() -> Any:
        try:
            return await create(request)
        except openai.APIStatusError as exc:
            cause = cause_of(exc)
            if cause == "flex_capacity":
                raise FlexBusy(exc) from None
            if cause == "flex_unsupported":
                raise FatalProviderError(unsupported_line(model, exc, secret), cause=cause) from None
            raise

    attempts = retries if fallback == "standard" else sys.maxsize - 1  # wait: until the item's timeout
    try:
        return _billed(await _FLEX_RETRY.call_async(flex, attempts), FLEX)
    except FlexBusy:
        standard = {name: value for name, value in request.items() if name != "service_tier"}
        return _billed(await create(standard), STANDARD_WIRE)


def _billed(response: Any, sent: str) -> Any:
    """The reply with the tier it was billed at: the server's word, else the tier asked for."""
    if getattr(response, "service_tier", None) is None:
        response.service_tier = sent
    return response


def tier_of(response: Any) -> Tier:
    """The price tier of a Responses reply (anything but flex is billed at the standard rates)."""
    return "flex" if getattr(response, "service_tier", None) == FLEX else "standard"
