"""Anthropic's Message Batches, as giant.llm.batch uses it.

`messages.batches.create(requests=[{"custom_id", "params"}])` takes the same params as
`messages.create`; a batch has ended when its processing_status is "ended", and its results (JSONL,
any order) say per request succeeded, errored, canceled or expired. A batch carries nothing of its
own choosing but its requests, so a batch whose id never came back is found by its size and
creation time (giant.llm.batch states the residual risk).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anthropic
from anthropic.types.messages import MessageBatchRequestCounts

from giant.llm.batch import (
    CLOCK_SKEW_S,
    BatchRequestError,
    BatchResults,
    BatchStatus,
    Outcome,
    unanswered,
)
from giant.llm.batch_records import BatchRecord

_PAGE = 100

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

    async def submit(self, requests: Sequence[tuple[str, dict[str, Any]]], record_id: str) -> str:
        batch = await self.client.messages.batches.create(
            requests=[{"custom_id": key, "params": body} for key, body in requests]  # type: ignore[typeddict-item]
        )
        return batch.id

    async def find(self, record: BatchRecord, known: set[str]) -> str | None:
        """Of the batches created since the record was written (the list is newest first) and not
        recorded otherwise, the one of its size created nearest to it."""
        since = record.created - CLOCK_SKEW_S
        found: list[tuple[float, str]] = []
        async for batch in self.client.messages.batches.list(limit=_PAGE):
            created = batch.created_at.timestamp()
            if created < since:
                break
            if batch.id not in known and _total(batch.request_counts) == len(record.keys):
                found.append((abs(created - record.created), batch.id))
        return min(found)[1] if found else None

    async def poll(self, batch_id: str) -> BatchStatus:
        batch = await self.client.messages.batches.retrieve(batch_id)
        counts = batch.request_counts
        total = _total(counts)
        ended = batch.processing_status == "ended"
        return BatchStatus(batch.processing_status, ended, total - counts.processing, total)

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


def _total(counts: MessageBatchRequestCounts) -> int:
    return counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
