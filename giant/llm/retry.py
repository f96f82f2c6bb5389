"""The one retry layer of a provider call: transient failures are asked again, with backoff.

The SDK clients retry nothing themselves (`max_retries=0`): their rule retries every 429, including
OpenAI's `insufficient_quota`, which no wait will fix, and an agent-level retry on top of theirs
multiplied the requests sent to a server that is down. Here a call is sent at most
`provider.max_retries + 1` times, only for a TransientError (rate limit, 5xx, connection), under the
policy of giant.retry that slide downloads share (Retry-After honoured, else jittered backoff).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from giant.llm.types import TransientError
from giant.retry import RetryPolicy

T = TypeVar("T")


def _asked(exc: BaseException) -> float | None:
    return exc.retry_after_s if isinstance(exc, TransientError) else None


_PROVIDER_RETRY = RetryPolicy(retryable=(TransientError,), asked=_asked)


async def with_retries(send: Callable[[], Awaitable[T]], max_retries: int) -> T:
    """`send()` raises TransientError for what is worth another attempt; anything else leaves at once."""
    return await _PROVIDER_RETRY.call_async(send, max_retries)
