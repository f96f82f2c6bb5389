"""Batch mode (provider.batch=true): the calls of a step round, gathered into one batch of the API.

An agent episode is sequential, but a campaign has many episodes at the same step. In batch mode the
provider's send step hands its request to the `BatchCollector` (custom_id = the call's ledger key)
and waits for the reply. The runner tells the collector how many episodes are running
(`batch_member`), so it submits one batch when every running episode is waiting on a call: a round
of equal-length episodes is one batch, not a wave of small ones. A size (`batch_max_requests`,
`batch_max_mb`) or time (`batch_wait_s`) threshold submits earlier, for episodes that fall behind.

Each batch is watched by one task that polls it with growing pauses, downloads its results and hands
each waiting episode its reply; a per-request error, an expired or cancelled request becomes that
call's ProviderError, retried under the usual rules (giant.llm.retry), which queue it again for the
next batch. Before a batch is submitted its keys are recorded, and its id right after
(giant.llm.batch_records): a call whose key is in a recorded batch waits on that batch, in this
process or after a kill -9 and rerun, so no request is ever submitted twice; replies are put into the
ledger by the provider as ordinary paid calls (giant.llm.sdk_provider), and later reruns replay them.

Memory per request is its body until submission and its reply until delivery; one watcher task per
batch in flight, whatever the number of episodes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from giant.llm.batch_records import BatchBook, BatchRecord
from giant.llm.sdk_errors import SDK_ERRORS, classify
from giant.llm.types import ProviderError, TransientError

log = logging.getLogger(__name__)

_POLL_GROWTH = 1.5  # each pause is this much longer than the last ...
_POLL_CAP = 10  # ... up to this many times batch_poll_s
_POLL_FAILURES = 10  # failed polls in a row before the waiting calls fail (their retry polls again)

# A request's SDK reply object, or the error it ended in (a ProviderError, or a BatchRequestError
# classified as the SDK's errors are).
Outcome = Any


@dataclass
class BatchStatus:
    """A batch as the API reported it at one poll; `detail` is what its `results` need."""

    state: str
    ended: bool
    done: int
    total: int
    detail: Any = None


@dataclass
class BatchResults:
    """An ended batch's outcome per custom_id; a request without one ends in `rest` (None: it was not
    answered, and is sent again)."""

    outcomes: dict[str, Outcome]
    rest: ProviderError | None = None


class BatchApi(Protocol):
    """One API's batch wire format (giant.llm.batch_openai, giant.llm.batch_anthropic). SDK errors
    leave as they are; the collector classifies them."""

    name: str

    async def submit(self, requests: Sequence[tuple[str, dict[str, Any]]]) -> str:
        """Create a batch of (custom_id, request body) and return its id."""
        ...

    async def poll(self, batch_id: str) -> BatchStatus: ...

    async def results(self, batch_id: str, status: BatchStatus) -> BatchResults:
        """An ended batch's outcomes, read from the API."""
        ...


class BatchRequestError(Exception):
    """A request the batch answered with an HTTP error: shaped like an SDK status error, so the causes
    of giant.llm.sdk_errors (rate limit, context, key ...) are read from it the same way."""

    def __init__(self, status_code: int, body: Any, message: str) -> None:
        super().__init__(f"{status_code} {message}")
        self.status_code = status_code
        self.body = body


def unanswered(batch_id: str, state: str) -> TransientError:
    """The failure of a request an ended batch did not answer (expired, cancelled): sent again."""
    return TransientError(f"batch {batch_id} ended {state} without answering this request", cause="server")


@dataclass
class _Queued:
    key: str
    body: dict[str, Any]
    size: int
    reply: asyncio.Future[None]  # done when the batch holding it exists, or could not be made


@dataclass
class _Watch:
    """One batch in flight: its record, and its outcomes once it has ended."""

    record: BatchRecord
    ended: asyncio.Future[None]
    results: BatchResults = field(default_factory=lambda: BatchResults({}))


class BatchCollector:
    """The batches of one provider instance, shared by every episode of the run."""

    def __init__(
        self,
        api: BatchApi,
        book: BatchBook,
        *,
        max_requests: int,
        max_bytes: int,
        wait_s: float,
        poll_s: float,
        secret: str | None,
    ) -> None:
        self.api = api
        self.book = book
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.wait_s = wait_s
        self.poll_s = poll_s
        self._secret = secret
        self.round = 0
        self._running = 0  # episodes the runner has started and not yet seen end
        self._waiting = 0  # calls waiting here: queued, or in a batch in flight
        self._queue: list[_Queued] = []
        self._queued_bytes = 0
        self._timer: asyncio.TimerHandle | None = None
        self._batch_of: dict[str, str] | None = None  # key -> the batch it is in (read on first use)
        self._records: dict[str, BatchRecord] = {}  # batch id -> record
        self._watches: dict[str, _Watch] = {}  # batch id -> its watcher, while one runs
        self._tasks: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ episodes

    def join(self) -> None:
        """An episode starts: a round waits for its call too."""
        self._running += 1

    def leave(self) -> None:
        """An episode ended: the round no longer waits for it."""
        self._running -= 1
        self._check()

    # ------------------------------------------------------------------ calls

    async def call(self, key: str, body: dict[str, Any]) -> Any:
        """The reply to `body` (custom_id `key`), from the batch it is already in, else from the next
        batch this call is queued for. Raises the request's ProviderError."""
        self._waiting += 1
        try:
            batch_id = self._in_flight().get(key)
            if batch_id is None:
                await self._queued(key, body)  # returns once the batch exists
                batch_id = self._in_flight()[key]
            else:
                self._check()  # this call may be the last one a round waited for
            return await self._from_batch(batch_id, key)
        finally:
            self._waiting -= 1

    def _in_flight(self) -> dict[str, str]:
        if self._batch_of is None:
            self._batch_of = {}
            for record in self.book.records(self.api.name):
                if record.batch_id is None:
                    log.warning(
                        "batch record %s has no id (a job died while creating it); its %d requests are "
                        "sent again",
                        record.record_id,
                        len(record.keys),
                    )
                    continue
                self._records[record.batch_id] = record
                self._batch_of.update(dict.fromkeys(record.keys, record.batch_id))
        return self._batch_of

    async def _queued(self, key: str, body: dict[str, Any]) -> None:
        loop = asyncio.get_running_loop()
        item = _Queued(key, body, len(json.dumps(body)), loop.create_future())
        if self._queue and self._queued_bytes + item.size > self.max_bytes:
            self._flush("size")
        self._queue.append(item)
        self._queued_bytes += item.size
        if self._timer is None:
            self._timer = loop.call_later(self.wait_s, self._flush, "time")
        self._check()
        await item.reply

    async def _from_batch(self, batch_id: str, key: str) -> Any:
        watch = self._watches.get(batch_id)
        if watch is None:  # a batch of an earlier process, or one whose watcher gave up: poll it
            watch = self._watch(self._records[batch_id])
        await asyncio.shield(watch.ended)  # shared by every call in the batch; a cancelled call leaves it
        outcome = watch.results.outcomes.pop(key, None)
        if self._in_flight().get(key) == batch_id:
            del self._in_flight()[key]  # answered: a failure's retry is a new request
        if not watch.results.outcomes:
            self._watches.pop(batch_id, None)  # every reply handed out: the batch is done with
        if outcome is None:
            raise watch.results.rest or unanswered(batch_id, watch.record.state)
        if isinstance(outcome, ProviderError):
            raise outcome
        if isinstance(outcome, Exception):
            raise classify(outcome, provider=self.api.name, secret=self._secret)
        return outcome

    def _check(self) -> None:
        """Submit when every running episode waits on a call, or the queue reached its size."""
        if not self._queue:
            return
        if self._waiting >= max(self._running, 1) or len(self._queue) >= self.max_requests:
            self._flush("round")

    def _flush(self, why: str) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        items = [item for item in self._queue if not item.reply.done()]  # a cancelled call is dropped
        self._queue, self._queued_bytes = [], 0
        if items:
            self.round += 1
            self._spawn(self._submit(items, self.round, why))

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _submit(self, items: list[_Queued], round_: int, why: str) -> None:
        keys = [item.key for item in items]
        record = self.book.before_submit(self.api.name, keys, round_)
        try:
            batch_id = await self._sdk(self.api.submit([(item.key, item.body) for item in items]))
        except ProviderError as exc:
            self.book.not_created(record)
            for item in items:
                if not item.reply.done():
                    item.reply.set_exception(exc)
            return
        record = self.book.created(record, batch_id)
        self._records[batch_id] = record
        self._in_flight().update(dict.fromkeys(keys, batch_id))
        log.info("batch round %d: %d requests in %s (submitted: %s)", round_, len(items), batch_id, why)
        self._watch(record)
        for item in items:
            if not item.reply.done():
                item.reply.set_result(None)

    async def _sdk(self, work: Any) -> Any:
        try:
            return await work
        except SDK_ERRORS as exc:
            raise classify(exc, provider=self.api.name, secret=self._secret) from None

    # ------------------------------------------------------------------ batches in flight

    def _watch(self, record: BatchRecord) -> _Watch:
        assert record.batch_id is not None
        watch = _Watch(record, asyncio.get_running_loop().create_future())
        # Its failure is raised to each call waiting on it; with none waiting it is not an error.
        watch.ended.add_done_callback(lambda ended: ended.cancelled() or ended.exception())
        self._watches[record.batch_id] = watch
        self._spawn(self._follow(watch))
        return watch

    async def _follow(self, watch: _Watch) -> None:
        """Poll until the batch ends, then read its results; a failure that polling again cannot
        cure fails the calls waiting on it (their retry watches the same batch again)."""
        batch_id = watch.record.batch_id
        assert batch_id is not None
        pause, failures, started = self.poll_s, 0, time.monotonic()
        try:
            while True:
                try:
                    status = await self._sdk(self.api.poll(batch_id))
                except TransientError:
                    failures += 1
                    if failures >= _POLL_FAILURES:
                        raise
                else:
                    failures = 0
                    watch.record = self.book.seen(watch.record, status.state)
                    log.info(
                        "batch round %d: %s %s, %d of %d requests done, waited %.0f s",
                        watch.record.round,
                        batch_id,
                        status.state,
                        status.done,
                        status.total,
                        time.monotonic() - started,
                    )
                    if status.ended:
                        watch.results = await self._sdk(self.api.results(batch_id, status))
                        watch.ended.set_result(None)
                        return
                await asyncio.sleep(pause)
                pause = min(pause * _POLL_GROWTH, self.poll_s * _POLL_CAP)
        except ProviderError as exc:
            del self._watches[batch_id]  # a later call polls the batch again
            watch.ended.set_exception(exc)
        finally:
            if not watch.ended.done():  # cancelled with the run: the batch stays recorded
                self._watches.pop(batch_id, None)
                watch.ended.cancel()


def batch_member(provider: object) -> Callable[[object], None]:
    """The runner's seam: an episode about to start joins its provider's batch rounds, and leaves
    them through the returned callback (the episode task's done callback). A provider that is not
    batching ignores both."""
    collector = getattr(provider, "batches", None)
    if not isinstance(collector, BatchCollector):
        return lambda _: None
    collector.join()
    return lambda _: collector.leave()


def batched(provider: object) -> bool:
    return isinstance(getattr(provider, "batches", None), BatchCollector)
