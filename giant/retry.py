"""The one retry policy of every network call giant makes: provider calls and slide downloads alike.

A server that failed for a passing reason (rate limit, 5xx, dropped connection) is asked again, at
most `retries` more times, waiting what it asked for (Retry-After, when no longer than
RETRY_AFTER_MAX_S) or else an exponential backoff with full jitter, so concurrent callers never come
back in step. No attempt follows sooner than a floor, so a server that says "Retry-After: 0" is not
hammered either. Anything not retryable leaves at the first attempt: a refused key or a missing file
fails the same way each time.

Each caller says what it retries and where the server's pause is read from the exception; the waits
are the same everywhere. This module imports nothing of giant's, so `llm` and `data` can both use it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from tenacity import AsyncRetrying, RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_random_exponential

T = TypeVar("T")

BACKOFF_MIN_S = 0.25  # never sooner than this: no attempt is sent again at once
BACKOFF_BASE_S = 1.0  # the first backoff is drawn from [0.25, 1 s], then [0.25, 2 s], [0.25, 4 s], ...
BACKOFF_MAX_S = 30.0
RETRY_AFTER_MAX_S = 120.0  # a server asking for longer gets the ordinary backoff instead


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """The pause a server asked for: retry-after-ms (OpenAI, Anthropic), then Retry-After in seconds
    or as an HTTP date. None when it asked for nothing readable. `headers` are looked up in lower
    case, as httpx's (which the SDKs and the fetcher both use) match any case."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            try:
                seconds = parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError):
                continue
        return max(0.0, seconds) if math.isfinite(seconds) else None
    return None


@dataclass(frozen=True)
class RetryPolicy:
    """What is worth another attempt (`retryable`), how to read the server's pause from such a
    failure (`asked`), and the backoff window: drawn from [min_s, base_s * 2^(n-1)], capped at max_s."""

    retryable: tuple[type[BaseException], ...]
    asked: Callable[[BaseException], float | None]
    base_s: float = BACKOFF_BASE_S
    max_s: float = BACKOFF_MAX_S
    min_s: float = BACKOFF_MIN_S

    def wait(self, state: RetryCallState) -> float:
        """Retry-After when the server gave one (at least min_s), else the jittered backoff."""
        outcome = state.outcome
        exc = outcome.exception() if outcome is not None else None
        asked = self.asked(exc) if exc is not None else None
        if asked is not None and asked <= RETRY_AFTER_MAX_S:
            return max(asked, self.min_s)
        backoff = wait_random_exponential(multiplier=self.base_s, max=self.max_s, min=self.min_s)
        return float(backoff(state))

    def _settings(self, retries: int) -> dict[str, Any]:
        return {
            "stop": stop_after_attempt(retries + 1),
            "wait": self.wait,
            "retry": retry_if_exception_type(self.retryable),
            "reraise": True,  # the caller sees the last failure itself, not tenacity's RetryError
        }

    def call(self, attempt: Callable[[], T], retries: int) -> T:
        """`attempt()` until it returns, raises something not retryable, or has failed retries + 1 times."""
        return Retrying(**self._settings(retries))(attempt)

    async def call_async(self, attempt: Callable[[], Awaitable[T]], retries: int) -> T:
        """The same for a coroutine; the waits do not block the event loop."""
        return await AsyncRetrying(**self._settings(retries))(attempt)
