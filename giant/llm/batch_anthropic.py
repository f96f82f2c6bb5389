"""Anthropic's Message Batches, as giant.llm.batch uses it.

`messages.batches.create(requests=[{"custom_id", "params"}])` takes the same params as
`messages.create`; a batch has ended when its processing_status is "ended", and its results (JSONL,
any order) say per request succeeded, errored, canceled or expired.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anthropic

from giant.llm.batch import BatchRequestError, BatchResults, BatchStatus, Outcome, unanswered

# The HTTP status each error type stands for, so its cause is read as a direct call's would be.
_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


class AnthropicBatches:
    name = "anthropic"

    def __init__(self, client: anthropic.AsyncAnthropic) -> None:
        self.client = client

    async def submit(self, requests: Sequence[tuple[str, dict[str, Any]]]) -> str:
        batch = await self.client.messages.batches.create(
            requests=[{"custom_id": key, "params": body} for key, body in requests]  # type: ignore[typeddict-item]
        )
        return batch.id

    async def poll(self, batch_id: str) -> BatchStatus:
        batch = await self.client.messages.batches.retrieve(batch_id)
        counts = batch.request_counts
        done = counts.succeeded + counts.errored + counts.canceled + counts.expired
        return BatchStatus(
            batch.processing_status, batch.processing_status == "ended", done, done + counts.processing
        )

    async def results(self, batch_id: str, status: BatchStatus) -> BatchResults:
        outcomes: dict[str, Outcome] = {}
        async for line in await self.client.messages.batches.results(batch_id):
            result = line.result
            if result.type == "succeeded":
                outcomes[line.custom_id] = result.message
            elif result.type == "errored":
                error = result.error.error
                code = _STATUS.get(error.type, 500)
                outcomes[line.custom_id] = BatchRequestError(
                    code, result.error.model_dump(), f"{error.type}: {error.message}"
                )
            else:
                outcomes[line.custom_id] = unanswered(batch_id, result.type)
        return BatchResults(outcomes)
