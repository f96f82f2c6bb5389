"""Gemini's Batch API with inlined requests, as giant.llm.batch uses it.

`batches.create(model, src=[{"contents", "config", "metadata": {"key": custom_id}}])` takes the
same contents and config as generateContent (one model per batch: the provider's); the batch carries
its pending record's id as `display_name`, by which a rerun finds a batch whose create reply was
lost. A batch has ended in JOB_STATE_SUCCEEDED, FAILED, CANCELLED, EXPIRED (or PARTIALLY_SUCCEEDED);
its `dest.inlined_responses` hold, per request and with its metadata, the reply or a JobError. A
request without one was not answered and is sent again. Inlined requests are limited to 20 MB per
batch (provider.batch_max_mb). SDK errors leave as ProviderErrors (giant.llm.providers.gemini.errors).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google import genai
from google.genai import errors as genai_errors

from giant.llm.batch import CLOCK_SKEW_S, BatchResults, BatchStatus, Outcome
from giant.llm.batch_records import BatchRecord
from giant.llm.providers.gemini.errors import classify, sdk_call
from giant.llm.types import FatalProviderError

KEY = "key"  # the metadata field holding a request's custom_id
_PAGE = 100
_ENDED = frozenset(
    {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED"}
    | {"JOB_STATE_PARTIALLY_SUCCEEDED"}
)


# google.rpc codes (a batch line's JobError) -> the HTTP status a direct call would have answered,
# so its cause is read as a direct call's is.
_HTTP = {3: 400, 4: 504, 5: 404, 7: 403, 8: 429, 9: 400, 13: 500, 14: 503, 16: 401}


PREFIX = "batches/"  # a job's name is batches/<id>; the record keeps the id, a file name


def _id(job: Any) -> str:
    return str(job.name).removeprefix(PREFIX)


def _state(job: Any) -> str:
    return str(getattr(job.state, "value", job.state) or "JOB_STATE_UNSPECIFIED")


class GeminiBatches:
    name = "gemini"

    def __init__(self, client: genai.Client, model: str, *, secret: str | None) -> None:
        self.client = client
        self.model = model
        self._secret = secret

    async def submit(self, requests: Sequence[tuple[str, dict[str, Any]]], record_id: str) -> str:
        src = [
            {"contents": body["contents"], "config": body["config"], "metadata": {KEY: key}}
            for key, body in requests
        ]
        job = await sdk_call(
            self.client.aio.batches.create(model=self.model, src=src, config={"display_name": record_id}),  # type: ignore[arg-type]
            secret=self._secret,
        )
        return _id(job)

    async def find(self, record: BatchRecord, known: set[str]) -> str | None:
        """The batch named after the record, among those created since it was written (the list is
        newest first, so the search stops at the first older one)."""
        since = record.created - CLOCK_SKEW_S
        pager = await sdk_call(self.client.aio.batches.list(config={"page_size": _PAGE}), secret=self._secret)
        async for job in pager:
            if job.create_time is not None and job.create_time.timestamp() < since:
                break
            if job.display_name == record.record_id and _id(job) not in known:
                return _id(job)
        return None

    async def poll(self, batch_id: str) -> BatchStatus:
        job = await sdk_call(self.client.aio.batches.get(name=PREFIX + batch_id), secret=self._secret)
        state = _state(job)
        ended = state in _ENDED
        stats = job.completion_stats
        done = int(getattr(stats, "successful_count", 0) or 0) + int(getattr(stats, "failed_count", 0) or 0)
        total = len(job.dest.inlined_responses or []) if ended and job.dest else done
        return BatchStatus(state, ended, done if not ended else total, total, job)

    async def results(self, batch_id: str, status: BatchStatus) -> BatchResults:
        job = status.detail
        responses = (job.dest.inlined_responses if job.dest else None) or []
        if status.state == "JOB_STATE_FAILED" and not responses:
            why = job.error.message if job.error is not None else "no reason given"
            return BatchResults(
                {}, FatalProviderError(f"gemini: batch {batch_id} failed: {why}", cause="bad_request")
            )
        outcomes: dict[str, Outcome] = {}
        for line in responses:
            key = (line.metadata or {}).get(KEY)
            if key is None:
                continue
            if line.response is not None:
                outcomes[key] = line.response
            else:
                error = line.error
                code = int(error.code or 13) if error is not None else 13
                code = code if code >= 100 else _HTTP.get(code, 500)
                message = (error.message if error is not None else None) or "no reason given"
                api_error = genai_errors.APIError(code, {"error": {"code": code, "message": message}})
                outcomes[key] = classify(api_error, secret=self._secret)
        return BatchResults(outcomes)
