"""Batch mode (provider.batch=true): the calls of a step round, gathered into one batch of the API.

An agent episode is sequential, but a campaign has many episodes at the same step. In batch mode the
provider's send step hands its request to the `BatchCollector` (custom_id = the call's ledger key)
and waits for the reply. The run's caller builds the collector (`batch_collector`)
and hands it to the provider and the runner; the runner tells it how many episodes are running
(`join`, `leave`), so it submits one batch when every running episode is waiting on a call: a round
of equal-length episodes is one batch, not a wave of small ones. A size (`batch_max_requests`,
`batch_max_mb`) or time (`batch_wait_s`) threshold submits earlier, for episodes that fall behind.

Each batch is watched by one task that polls it with growing pauses, downloads its results and hands
each waiting episode its reply; a per-request error, an expired or cancelled request becomes that
call's ProviderError, retried under the usual rules (giant.llm.retry), which queue it again for the
next batch. Before a batch is submitted its keys are recorded, and its id right after
(giant.llm.batch_records): a call whose key is in a recorded batch waits on that batch, in this
process or after a kill -9 and rerun, so no request is ever submitted twice.

Money is data: when a batch ends, the collector itself puts every reply into the ledger (the
provider's `ReplyStore`) before any episode sees it, so a reply whose episode is gone (stopped, cut,
or a rerun whose changed settings ask other keys) is still kept; the batch's record is then marked
collected. A run starts by watching every recorded batch not yet collected, whatever it asks.

The create request is the one step whose outcome can be unknown: a job killed, or a connection
dropped, while it is on the wire. Its pending record then has no id, and before its keys go out again
the API is asked whether that batch exists (`BatchApi.find`): OpenAI batches carry the record id as
metadata; Anthropic's carry nothing, so a batch of the same size created in the minutes after the
record was written is taken for it (another job of the same workspace submitting a batch of exactly
that size at that time could be mistaken for it: then its replies are kept under their own keys,
ours go out again, and the lost batch is paid without being read).

Memory per request is its body until submission and its reply until delivery; one watcher task per
batch in flight, whatever the number of episodes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

from giant.errors import ConfigError
from giant.llm.batch_records import BATCHES_DIR, BatchBook, BatchRecord
from giant.llm.config import BatchedSettings, ProviderConfig
from giant.llm.ledger import Ledger
from giant.llm.sdk_errors import SDK_ERRORS, classify
from giant.llm.types import FatalProviderError, ProviderError, TransientError

log = logging.getLogger(__name__)

_POLL_GROWTH = 1.5  # each pause is this much longer than the last ...
_POLL_CAP = 10  # ... up to this many times batch_poll_s
_POLL_FAILURES = 10  # failed polls in a row before the waiting calls fail (their retry polls again)
# How far the API's clock may be behind ours: a batch created for a pending record is looked for
# among those created after the record was written, less this.
CLOCK_SKEW_S = 600.0

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
    """One API's batch wire format (the `batch` module of each provider package that has one). SDK
    errors leave as they are; the collector classifies them."""

    name: str

    async def submit(self, requests: Sequence[tuple[str, dict[str, Any]]], record_id: str) -> str:
        """Create a batch of (custom_id, request body) and return its id; `record_id` goes with it
        where the API can carry it, for `find`."""
        ...

    async def find(self, record: BatchRecord, known: set[str]) -> str | None:
        """The batch created for the pending `record` whose id never came back, or None: it was not
        created. Batches in `known` belong to other records and are never the answer."""
        ...

    async def poll(self, batch_id: str) -> BatchStatus: ...

    async def results(self, batch_id: str, status: BatchStatus) -> BatchResults:
        """An ended batch's outcomes, read from the API."""
        ...


class ReplyStore(Protocol):
    """Where the replies of ended batches are kept: the provider's ledger (giant.llm.sdk_provider)."""

    def keep(self, key: str, reply: Any) -> None:
        """Put a paid reply into the ledger under its key, whether or not a call is waiting for it."""
        ...

    def reread(self, key: str) -> Any:
        """A reply `keep` put away, as the SDK object (None: its file is gone or unreadable)."""
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
    """One batch in flight: its record, the keys calls wait on, and their outcomes once it ended."""

    record: BatchRecord
    ended: asyncio.Future[None]
    waiting: set[str] = field(default_factory=set)
    results: BatchResults = field(default_factory=lambda: BatchResults({}))


class BatchCollector:
    """The batches of one run: built by its caller, connected by the provider it is handed to, and
    shared by every episode."""

    def __init__(
        self, book: BatchBook, *, max_requests: int, max_bytes: int, wait_s: float, poll_s: float
    ) -> None:
        self.book = book
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.wait_s = wait_s
        self.poll_s = poll_s
        self._wire: tuple[Callable[[], BatchApi], ReplyStore] | None = None  # connect() sets it
        self._secret: str | None = None
        self.round = 0
        self._running = 0  # episodes the runner has started and not yet seen end
        self._waiting = 0  # calls waiting here: queued, or in a batch in flight
        self._queue: list[_Queued] = []
        self._queued_bytes = 0
        self._timer: asyncio.TimerHandle | None = None
        self._loading: asyncio.Task[None] | None = None  # reads the recorded batches, once
        self._batch_of: dict[str, str] = {}  # key -> the batch in flight it is in
        self._kept: set[str] = set()  # keys whose reply a batch brought before any call asked for it
        self._records: dict[str, BatchRecord] = {}  # batch id -> record
        self._watches: dict[str, _Watch] = {}  # batch id -> its watcher, while one runs
        self._tasks: set[asyncio.Task[None]] = set()
        self._listeners: list[Callable[[str], None]] = []

    def connect(self, api: Callable[[], BatchApi], store: ReplyStore, secret: str | None) -> None:
        """The provider built with this collector hands it the wire: its batch API (built on first use,
        once the provider has its client), where replies are kept, and the key to keep out of errors."""
        self._wire, self._secret = (api, store), secret

    @cached_property
    def api(self) -> BatchApi:
        assert self._wire is not None, "the provider built with this collector connects it"
        return self._wire[0]()

    @property
    def store(self) -> ReplyStore:
        assert self._wire is not None, "the provider built with this collector connects it"
        return self._wire[1]

    # ------------------------------------------------------------------ episodes

    def join(self) -> None:
        """An episode starts: a round waits for its call too."""
        self._running += 1

    def leave(self) -> None:
        """An episode ended: the round no longer waits for it."""
        self._running -= 1
        self._check()

    @contextmanager
    def held_back(self) -> Iterator[None]:
        """An episode's call waits for the run budget until the calls in flight settle (those queued
        here included): the round must not wait for it, so it counts as waiting meanwhile, and the
        round's batch goes with the calls that fit the budget."""
        self._waiting += 1
        try:
            self._check()
            yield
        finally:
            self._waiting -= 1

    # ------------------------------------------------------------------ calls

    async def call(self, key: str, body: dict[str, Any]) -> Any:
        """The reply to `body` (custom_id `key`), from the batch it is already in, else from the next
        batch this call is queued for. Raises the request's ProviderError."""
        await self._load()
        if key in self._kept:  # a batch brought it before this call asked: it is in the ledger
            self._kept.discard(key)  # once: a retry of this call is a new request
            reply = self.store.reread(key)
            if reply is not None:
                return reply
        self._waiting += 1
        try:
            batch_id = self._batch_of.get(key)
            if batch_id is None:
                await self._queued(key, body)  # returns once the batch exists
                batch_id = self._batch_of[key]
            else:
                self._check()  # this call may be the last one a round waited for
            return await self._from_batch(batch_id, key)
        finally:
            self._waiting -= 1

    async def holds(self, key: str) -> bool:
        """Whether a batch answers `key` (one in flight, or one this run collected before the call
        came) rather than the ledger's replay. Unknown while the API cannot be asked: then no."""
        try:
            await self._load()
        except ProviderError:
            return False
        return key in self._batch_of or key in self._kept

    async def _load(self) -> None:
        if self._loading is None:
            self._loading = asyncio.get_running_loop().create_task(self._read_book())
        loading = self._loading
        try:
            await asyncio.shield(loading)
        except ProviderError:
            if self._loading is loading:
                self._loading = None  # the API could not be asked: the next call reads the book again
            raise

    async def _read_book(self) -> None:
        """Watch every recorded batch not yet collected, this run's calls in it or not; a pending
        record (its job died while creating the batch) is first looked up at the API."""
        records = self.book.records(self.api.name)
        known = {record.batch_id for record in records if record.batch_id is not None}
        for record in records:
            if record.collected or record.batch_id in self._records:
                continue
            if record.batch_id is None:
                batch_id = await self._sdk(self.api.find(record, known))
                if batch_id is None:
                    log.warning(
                        "batch record %s: its job died before the API created its batch; its %d "
                        "requests are sent again when asked",
                        record.record_id,
                        len(record.keys),
                    )
                    self.book.not_created(record)
                    continue
                log.warning(
                    "batch record %s: its job died while creating it; found it as %s",
                    record.record_id,
                    batch_id,
                )
                known.add(batch_id)
                record = self.book.created(record, batch_id)
            self._adopt(record)

    def _adopt(self, record: BatchRecord) -> None:
        """A batch in flight: its keys wait on it, and a watcher follows it to its end."""
        assert record.batch_id is not None
        self._records[record.batch_id] = record
        self._batch_of.update(dict.fromkeys(record.keys, record.batch_id))
        if record.batch_id not in self._watches:
            self._watch(record)

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
        if watch is None:  # a batch whose watcher gave up: poll it again
            watch = self._watch(self._records[batch_id])
        watch.waiting.add(key)
        try:
            await asyncio.shield(watch.ended)  # shared by the batch's calls; a cancelled call leaves it
            outcome = watch.results.outcomes.pop(key, None)
        finally:
            self._release(watch, key)
        if outcome is None:
            raise watch.results.rest or unanswered(batch_id, watch.record.state)
        if isinstance(outcome, ProviderError):
            raise outcome
        if isinstance(outcome, Exception):
            raise classify(outcome, provider=self.api.name, secret=self._secret)
        return outcome

    def _release(self, watch: _Watch, key: str) -> None:
        """A call stops waiting on `watch`: answered, failed, or cancelled with its episode (then its
        reply, already in the ledger, answers the call if it is ever made again)."""
        watch.waiting.discard(key)
        batch_id = watch.record.batch_id
        if not watch.ended.done() or watch.ended.cancelled() or watch.ended.exception() is not None:
            return
        if not isinstance(watch.results.outcomes.pop(key, None), Exception | None):
            self._kept.add(key)
        if self._batch_of.get(key) == batch_id:
            del self._batch_of[key]  # answered: a failure's retry is a new request
        if not watch.waiting and self._watches.get(batch_id or "") is watch:
            del self._watches[batch_id or ""]  # every waiting call served: the batch is done with

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
            batch_id = await self._sdk(
                self.api.submit([(item.key, item.body) for item in items], record.record_id)
            )
        except ProviderError as exc:
            try:
                found = await self._created_anyway(record, exc)
            except ProviderError as lost:
                found, exc = None, lost
            if found is None:
                for item in items:
                    if not item.reply.done():
                        item.reply.set_exception(exc)
                return
            batch_id = found
        self._adopt(self.book.created(record, batch_id))
        log.info("batch round %d: %d requests in %s (submitted: %s)", round_, len(items), batch_id, why)
        self._report()
        for item in items:
            if not item.reply.done():
                item.reply.set_result(None)

    async def _created_anyway(self, record: BatchRecord, exc: ProviderError) -> str | None:
        """The create request failed, but the API may have made the batch before its reply was lost:
        look it up (after a pause, so that a create still being handled has ended) before anything
        is sent again. None: it was not created, and its pending record goes. Raises a fatal error
        when the API cannot be asked: the record stays, for the next run to look up."""
        for _ in range(_POLL_FAILURES):
            await asyncio.sleep(self.poll_s)
            try:
                batch_id = await self._sdk(self.api.find(record, set(self._records)))
            except TransientError:
                continue
            if batch_id is None:
                self.book.not_created(record)
            else:
                log.warning("batch round %d: the create failed (%s) yet made %s", record.round, exc, batch_id)
            return batch_id
        raise FatalProviderError(
            f"{self.api.name}: batch create failed ({exc}) and the API could not say whether it made "
            f"the batch; record {record.record_id} is kept for the next run to look up",
            cause="server",
        )

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
        pause, failures = self.poll_s, 0
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
                        time.time() - watch.record.created,
                    )
                    self._report()
                    if status.ended:
                        self._collect(watch, await self._sdk(self.api.results(batch_id, status)))
                        return
                await asyncio.sleep(pause)
                pause = min(pause * _POLL_GROWTH, self.poll_s * _POLL_CAP)
        except ProviderError as exc:
            self._forget(watch)  # a later call polls the batch again
            watch.ended.set_exception(exc)
        finally:
            if not watch.ended.done():  # cancelled with the run: the batch stays recorded
                self._forget(watch)
                watch.ended.cancel()
            self._report()

    def _collect(self, watch: _Watch, results: BatchResults) -> None:
        """An ended batch: every reply into the ledger first (money is data, whoever asked), the
        record marked collected, then each waiting call handed its outcome. The replies no call waits
        for leave memory; a call that asks for one later reads it back (`_kept`)."""
        for key, outcome in results.outcomes.items():
            if not isinstance(outcome, Exception):
                self.store.keep(key, outcome)
        watch.record = self.book.collected(watch.record)
        waiting = watch.waiting
        for key in watch.record.keys:
            if key in waiting:
                continue
            if not isinstance(results.outcomes.get(key), Exception | None):
                self._kept.add(key)
            if self._batch_of.get(key) == watch.record.batch_id:
                del self._batch_of[key]
        watch.results = BatchResults(
            {key: outcome for key, outcome in results.outcomes.items() if key in waiting}, results.rest
        )
        if not waiting:
            self._forget(watch)
        watch.ended.set_result(None)

    def _forget(self, watch: _Watch) -> None:
        if self._watches.get(watch.record.batch_id or "") is watch:
            del self._watches[watch.record.batch_id or ""]

    # ------------------------------------------------------------------ progress

    def on_progress(self, listener: Callable[[str], None]) -> None:
        """`listener` is told `progress()` whenever a batch is submitted, polled or ends."""
        self._listeners.append(listener)

    def progress(self) -> str:
        """The newest round in flight, its requests and how long it has waited ("" when none)."""
        watches = [watch for watch in self._watches.values() if not watch.ended.done()]
        if not watches:
            return ""
        newest = max(watches, key=lambda watch: watch.record.created)
        waited = time.time() - newest.record.created
        text = (
            f"batch round {newest.record.round}: {len(newest.record.keys)} requests, waited {_span(waited)}"
        )
        return text if len(watches) == 1 else f"{text} (+{len(watches) - 1} batches)"

    def _report(self) -> None:
        text = self.progress()
        for listener in self._listeners:
            listener(text)


def _span(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def batch_collector(cfg: ProviderConfig, ledger: Ledger | None) -> BatchCollector | None:
    """The batch rounds of provider.batch=true (giant.llm.batch), recorded beside `ledger`: built by
    the run's caller and handed to both the provider (`build_provider`) and the runner, which tells
    it how many episodes run. None: each call is sent on its own."""
    if not isinstance(cfg, BatchedSettings) or not cfg.batch:
        return None
    if ledger is None:
        raise ConfigError(
            f"provider={cfg.name}: provider.batch=true records its batches beside the ledger; "
            "run it with a ledger"
        )
    return BatchCollector(
        BatchBook(Path(ledger.root) / BATCHES_DIR),
        max_requests=cfg.batch_max_requests,
        max_bytes=int(cfg.batch_max_mb * 1e6),
        wait_s=cfg.batch_wait_s,
        poll_s=cfg.batch_poll_s,
    )
