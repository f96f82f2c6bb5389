"""OpenAI's Batch API for the Responses endpoint, as giant.llm.batch uses it.

A batch is a JSONL file (`purpose="batch"`) of {"custom_id", "method": "POST", "url": "/v1/responses",
"body"} lines, then `batches.create(endpoint="/v1/responses", completion_window="24h")`. Once the batch
has ended (completed, expired, cancelled or failed) its output file holds the answered requests and its
error file the others; a request in neither was not answered. Each batch carries its pending
record's id as metadata (`giant_pending`), by which a rerun finds a batch whose id never came back.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

import openai
from openai.types.responses import Response

from giant.llm.batch import (
    CLOCK_SKEW_S,
    BatchRequestError,
    BatchResults,
    BatchStatus,
    Outcome,
    unanswered,
)
from giant.llm.batch_records import BatchRecord
from giant.llm.types import FatalProviderError

ENDPOINT: Final = "/v1/responses"
PENDING_KEY: Final = "giant_pending"  # the batch's metadata key holding its pending record's id
_PAGE = 100
_ENDED = frozenset({"completed", "expired", "cancelled", "failed"})


class OpenAIBatches:
    name = "openai"

    def __init__(self, client: openai.AsyncOpenAI) -> None:
        self.client = client

    async def submit(self, requests: Sequence[tuple[str, dict[str, Any]]], record_id: str) -> str:
        lines = (
            json.dumps({"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body})
            for key, body in requests
        )
        data = ("\n".join(lines) + "\n").encode()
        upload = await self.client.files.create(file=("giant-batch.jsonl", data), purpose="batch")
        batch = await self.client.batches.create(
            input_file_id=upload.id,
            endpoint=ENDPOINT,
            completion_window="24h",
            metadata={PENDING_KEY: record_id},
        )
        return batch.id

    async def find(self, record: BatchRecord, known: set[str]) -> str | None:
        """The batch whose metadata names the record, among those created since it was written (the
        list is newest first, so the search stops at the first older one)."""
        since = record.created - CLOCK_SKEW_S
        async for batch in self.client.batches.list(limit=_PAGE):
            if batch.created_at < since:
                break
            if (batch.metadata or {}).get(PENDING_KEY) == record.record_id and batch.id not in known:
                return batch.id
        return None

    async def poll(self, batch_id: str) -> BatchStatus:
        batch = await self.client.batches.retrieve(batch_id)
        counts = batch.request_counts
        done = (counts.completed + counts.failed) if counts else 0
        total = counts.total if counts else 0
        return BatchStatus(batch.status, batch.status in _ENDED, done, total, batch)

    async def results(self, batch_id: str, status: BatchStatus) -> BatchResults:
        batch = status.detail
        if batch.status == "failed":  # the file itself was refused: none of its lines ran
            errors = batch.errors.data if batch.errors and batch.errors.data else []
            why = "; ".join(f"{e.code}: {e.message}" for e in errors) or "no reason given"
            return BatchResults(
                {}, FatalProviderError(f"openai: batch {batch_id} failed: {why}", cause="bad_request")
            )
        outcomes: dict[str, Outcome] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                content = await self.client.files.content(file_id)
                for line in content.text.splitlines():
                    if line.strip():
                        key, outcome = _outcome(json.loads(line), batch_id, batch.status)
                        outcomes[key] = outcome
        return BatchResults(outcomes)


def _outcome(line: dict[str, Any], batch_id: str, state: str) -> tuple[str, Outcome]:
    """One output or error line -> the reply object, or the error the call raises."""
    key = line["custom_id"]
    response = line.get("response") or {}
    status_code = response.get("status_code")
    if status_code == 200:
        reply = Response.construct(**response["body"])
        reply._request_id = response.get("request_id")
        return key, reply
    if status_code is not None:
        body = response.get("body") or {}
        error = body.get("error") or {}
        return key, BatchRequestError(status_code, body, str(error.get("message") or error or body))
    error = line.get("error") or {}
    return key, unanswered(batch_id, f"{state} ({error.get('code')}: {error.get('message')})")
