"""The one retry layer of a provider call: transient failures are asked again, with backoff.

The SDK clients retry nothing themselves (`max_retries=0`): their rule retries every 429, including
OpenAI's `insufficient_quota`, which no wait will fix, and an agent-level retry on top of theirs
multiplied the requests sent to a server that is down. Here a call is sent at most
`provider.max_retries + 1` times, only for a transient cause (rate limit, 5xx, connection), waiting
what the server asked for (Retry-After) or an exponential backoff with full jitter, so concurrent
items never retry in step.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_random_exponential

from giant.llm.types import TransientError

T = TypeVar("T")

BACKOFF_MIN_S = 0.25  # never sooner than this: no attempt is sent again at once
BACKOFF_BASE_S = 1.0  # the first backoff is drawn from [0.25, 1 s], then [0.25, 2 s], [0.25, 4 s], ...
BACKOFF_MAX_S = 30.0
RETRY_AFTER_MAX_S = 120.0  # a server asking for longer is treated as failing now

_backoff = wait_random_exponential(multiplier=BACKOFF_BASE_S, max=BACKOFF_MAX_S, min=BACKOFF_MIN_S)


def _wait(state: RetryCallState) -> float:
    """Retry-After when the server gave one (at least BACKOFF_MIN_S), else the jittered backoff."""
    outcome = state.outcome
    exc = outcome.exception() if outcome is not None else None
    asked = getattr(exc, "retry_after_s", None)
    if asked is not None and asked <= RETRY_AFTER_MAX_S:
        return max(float(asked), BACKOFF_MIN_S)
    return float(_backoff(state))


async def with_retries(send: Callable[[], Awaitable[T]], max_retries: int) -> T:
    """`send()` raises TransientError for what is worth another attempt; anything else leaves at once."""
    retrying = AsyncRetrying(
        stop=stop_after_attempt(max_retries + 1),
        wait=_wait,
        retry=retry_if_exception_type(TransientError),
        reraise=True,
    )
    return await retrying(send)
