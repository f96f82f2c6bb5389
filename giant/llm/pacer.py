"""One pacer per provider and model, shared by every lane of a run: requests and tokens per minute.

Providers enforce a per-minute limit over much shorter periods (OpenAI: 60,000 RPM may be enforced as
1,000 per second). Each limit here is a GCRA bucket holding at most one second's worth (`BURST_S`):
a request is booked when the debt after it stays within that second, so lanes are spaced at the
limit's rate, never bunched; and, by what actually left, no second holds more than a second's worth
(a request larger than that goes alone).

The limits, per kind (requests, tokens, input and output tokens), come from `provider.rpm`/`tpm`
and the rate-limit headers of every reply (giant.llm.ratelimit_headers); when they disagree the lower
wins (the server's cannot be exceeded, a lower setting is the user's choice), and a `remaining`
below one second's worth moves the bucket's debt to what the server says is left.
Requests are booked at SAFETY (98%) of the limit, a margin for the jitter (event loop, SDK, server)
that a one-second quantum would refuse; only 429s at a known limit widen it (HEADROOM_CUT): each
costs one spacing, a wider margin every request. As a request leaves (`depart`: the HTTP client's
request hook where the SDK has one) no window of a second, stretched by half the margin, may hold
more than a second's worth of what actually left: a lane that left late holds the next back.

The first request goes alone (the others wait at most PROBE_WAIT_S): its reply names the limits and
it pays the cold start (the SDK's first call, the first connection). Then, with a limit known (a
setting, a header, a 429's quota such as Gemini's QuotaFailure), every lane goes, paced; with none,
one more request in flight per answer, halved by a 429 that names no limit.

A 429 (`throttled`) pauses every lane until the reset the server named (Retry-After, Gemini's
RetryInfo, the exhausted bucket's reset header), to the millisecond, or a backoff doubling with each
429 in a row; then the lanes go one spacing apart. Clock and sleep are injected for the tests.
"""

from __future__ import annotations

import asyncio
import math
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Literal

from giant.llm.ratelimit_headers import read_limits

Kind = Literal["requests", "tokens", "input_tokens", "output_tokens"]
KINDS: tuple[Kind, ...] = ("requests", "tokens", "input_tokens", "output_tokens")

_LEAVING: ContextVar[Mapping[Kind, float] | None] = ContextVar("giant_pacer_leaving", default=None)
BURST_S = 1.0  # a bucket holds at most this many seconds of its limit: a second's worth, never a minute's
SAFETY = 0.98  # book this share of the limit: the jitter between two processes (see above)
# A 429 at a known limit: 1% more room (down to HEADROOM_MIN), 0.02% back an answer (one in fifty refused)
HEADROOM_CUT = 0.01
HEADROOM_STEP = 0.0002
HEADROOM_MIN = 0.85
PROBE_WAIT_S = 30.0  # the longest the other lanes wait for the first reply
BACKOFF_FIRST_S = 1.0  # a 429 that names no reset pauses 1 s, then 2, 4, ... up to BACKOFF_MAX_S
BACKOFF_MAX_S = 60.0


@dataclass
class Bucket:
    """One limit: `setting` (per minute, from the config) and `server` (from the headers); `tat` is
    when the bucket is full again by the turns booked (its debt: `tat - now` s); `gone`: what left."""

    setting: float | None = None
    server: float | None = None
    tat: float = 0.0
    headroom: float = SAFETY  # the share of the limit paced at (less after 429s, see HEADROOM_CUT)
    gone: deque[tuple[float, float]] = field(default_factory=deque)  # (left at, units)

    @property
    def per_minute(self) -> float | None:
        """The limit in force: the lower of the setting and the server's."""
        known = [v for v in (self.setting, self.server) if v]
        return min(known) if known else None

    @property
    def rate(self) -> float | None:
        per_minute = self.per_minute
        return per_minute / 60.0 * self.headroom if per_minute else None

    def start(self, units: float, now: float) -> float:
        """When `units` may be booked: when the debt after them is within one second (a request
        larger than a second's worth goes alone, once the bucket is full)."""
        rate = self.rate
        if rate is None or units <= 0:
            return now
        return max(now, self.tat - max(0.0, BURST_S - units / rate))

    def debit(self, units: float, at: float) -> None:
        rate = self.rate
        if rate is not None and units:
            self.tat = max(self.tat, at) + units / rate

    def credit(self, units: float) -> None:
        """Units debited but not used (an estimate corrected by the reply); never below empty."""
        rate = self.rate
        if rate is not None and units:
            self.tat -= units / rate

    def restart(self, at: float) -> None:
        """After a 429's pause: the bucket holding one unit at `at`."""
        rate = self.rate
        if rate is not None:
            self.tat = at + max(0.0, BURST_S - 1.0 / rate)

    def ready(self, units: float, now: float) -> float:
        """When `units` may leave: no window of a second, stretched by half the margin, holds more than
        a second's worth of what actually left (a lane whose loop was busy with another reply left
        late: the next, on time, would follow it too closely). A larger request goes alone."""
        per_minute = self.per_minute
        if not per_minute or units <= 0:
            return now
        window = BURST_S * 2.0 / (1.0 + self.headroom)
        capacity = per_minute / 60.0 * BURST_S
        while self.gone and self.gone[0][0] <= now - window:
            self.gone.popleft()
        total, start = sum(n for _, n in self.gone), now
        for at, n in self.gone:  # the oldest leave the window until this request fits
            if total + units <= capacity or (not total and units > capacity):
                break
            start, total = at + window, total - n
        return start

    def leaves(self, units: float, at: float) -> None:
        if self.per_minute and units > 0:
            self.gone.append((at, units))

    def left(self, remaining: float, now: float) -> None:
        """The server says `remaining` units are left now: a debt of at least what that means."""
        rate = self.rate
        if rate is None:
            return
        capacity = rate * BURST_S
        if remaining < capacity:
            self.tat = max(self.tat, now + (capacity - max(0.0, remaining)) / rate)


@dataclass
class PacerStats:
    """What the pacer saw over a run: the job records it (giant.record.summary.Pacing)."""

    requests: int = 0  # sent, 429s included
    throttled: int = 0  # answered 429 (rate limit)
    paused_s: float = 0.0  # seconds every lane was held by 429 pauses (their union)
    tokens: int = 0  # input + output tokens of the answered requests, as the replies counted them
    answered: int = 0  # requests answered (a reply the runtime could count)
    latency_s: float = 0.0  # their latencies, summed (the pacer's waits excluded)
    waited_s: float = 0.0  # seconds requests waited for their turn, summed over the lanes (the pilot
    # forecast takes them out of an item-run's time to find giant's own: giant.eval.pilot_time)
    used: dict[str, float] = field(default_factory=dict)  # units by kind, as the replies counted them


class Pacer:
    """Shared by every lane that calls one provider and model (`pacer_for`)."""

    def __init__(
        self,
        *,
        rpm: float | None = None,
        tpm: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.buckets: dict[Kind, Bucket] = {kind: Bucket() for kind in KINDS}
        self.buckets["requests"].setting = rpm
        self.buckets["tokens"].setting = tpm
        self.clock = clock
        self.sleep = sleep
        self.stats = PacerStats()
        self.paused_until = 0.0
        self._streak = 0  # 429s in a row, for the backoff when the server names no reset
        self._epoch = 0  # bumped by each 429: the lanes waiting book their turns again
        self._hint: float | None = None  # the reset a 429's headers named, in seconds from then
        # Requests allowed in flight: the first alone, then (slow start) one more per answer until a
        # limit is known and an answer is in; inf from then on.
        self._window = 1.0
        self._in_flight = 0
        self._room = asyncio.Event()  # set by each reply: the lanes waiting for room look again

    # ----------------------------------------------------------------------------- scheduling

    def reserve(self, cost: Mapping[Kind, float], now: float) -> float:
        """Book one request of `cost` units per kind; the time it may be sent (>= now). Synchronous,
        so concurrent lanes book one after another and are spaced, never bunched."""
        start = max(now, self.paused_until)
        units = {"requests": 1.0, **cost}
        for kind, bucket in self.buckets.items():
            start = max(start, bucket.start(units.get(kind, 0.0), start))
        for kind, bucket in self.buckets.items():
            bucket.debit(units.get(kind, 0.0), start)
        return start

    async def acquire(self, cost: Mapping[Kind, float], *, hooked: bool = False) -> None:
        """Wait for this request's turn (and any pause a 429 started meanwhile); one `finished` follows
        each. `hooked`: the HTTP client calls `depart` itself, as the request leaves."""
        entered = self.clock()
        await self._enter()
        epoch = self._epoch
        start = self.reserve(cost, self.clock())
        while True:
            now = self.clock()
            if epoch != self._epoch:  # a 429 restarted the schedule: book again behind its pause
                epoch, start = self._epoch, self.reserve(cost, now)
            wait = max(start, self.paused_until) - now
            if wait <= 0:
                break
            await self.sleep(wait)
        self.stats.requests += 1
        self.stats.waited_s += self.clock() - entered
        units: dict[Kind, float] = {"requests": 1.0, **cost}
        if hooked:
            _LEAVING.set(units)  # the HTTP client's request hook calls `depart` as the bytes leave
        else:
            await self.depart(units)

    async def depart(self, units: Mapping[Kind, float] | None = None) -> None:
        """The last check, as the request leaves (the HTTP client's request hook, where it has one,
        after the SDK's own work): never closer to the requests before it than the limits allow,
        judged by what left (Bucket.ready). `units` None: those `acquire` left for this task."""
        if units is None:
            units = _LEAVING.get()
            _LEAVING.set(None)
            if units is None:  # a request the pacer does not pace (a batch's)
                return
        entered = self.clock()
        while True:
            now = self.clock()
            ready = max(bucket.ready(units.get(kind, 0.0), now) for kind, bucket in self.buckets.items())
            wait = max(ready, self.paused_until) - now
            if wait <= 0:
                break
            await self.sleep(wait)
        for kind, bucket in self.buckets.items():
            bucket.leaves(units.get(kind, 0.0), now)
        self.stats.waited_s += self.clock() - entered

    async def _enter(self) -> None:
        while self._in_flight >= self._window:
            self._room.clear()
            try:
                await asyncio.wait_for(self._room.wait(), PROBE_WAIT_S)
            except TimeoutError:
                self._window = math.inf  # the first replies are slow; stop holding lanes back for them
        self._in_flight += 1

    def finished(self, ok: bool) -> None:
        """A request's reply (or failure) is in: an answer lets every lane go when a limit is known,
        else makes room for one more request in flight."""
        self._in_flight = max(0, self._in_flight - 1)
        _LEAVING.set(None)  # a request that failed before it left leaves nothing for the next hook
        if ok and math.isfinite(self._window):
            self._window = math.inf if self.limits() else self._window + 1
        self._room.set()

    # ----------------------------------------------------------------------------- what servers say

    def observe(self, status: int, headers: Mapping[str, str]) -> None:
        """A reply's headers, read as it arrives (every reply, 429s too)."""
        now = self.clock()
        limits = read_limits(headers, wall_now=time.time())
        self._apply(limits.limit, now)
        for kind, remaining in limits.remaining.items():
            self.buckets[kind].left(remaining, now)  # type: ignore[index]
        if status == 429:
            self._hint = limits.reset_of_exhausted()
        elif status < 400:
            self._streak = 0

    def _apply(self, per_minute: Mapping[str, float], now: float) -> None:
        for kind, limit in per_minute.items():
            bucket = self.buckets[kind]  # type: ignore[index]
            if bucket.server != limit:
                bucket.server = limit
                bucket.tat = max(bucket.tat, now)  # a new rate starts from here, not from an old debt

    def throttled(self, asked_s: float | None, limits: Mapping[str, float] | None = None) -> float:
        """A 429: every lane pauses until the reset the server named, else a doubling backoff.
        `limits` are per-minute limits the 429 named (Gemini's QuotaFailure); a 429 that names none
        while the limits are unknown halves the requests in flight. The pause's length is returned."""
        self.stats.throttled += 1
        for bucket in self.buckets.values():
            if bucket.per_minute:  # known before this 429: the jitter needs more room
                bucket.headroom = max(HEADROOM_MIN, bucket.headroom - HEADROOM_CUT)
        if limits:
            self._apply(limits, self.clock())
        elif math.isfinite(self._window):
            self._window = max(1.0, self._window / 2)
        self._streak += 1
        named = asked_s if asked_s is not None else self._hint
        self._hint = None
        pause = named if named is not None else min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (self._streak - 1))
        pause = max(pause, 1.0 / (self.buckets["requests"].rate or float("inf")), 0.05)
        now = self.clock()
        until = now + pause
        if until > self.paused_until:
            self.stats.paused_s += until - max(now, self.paused_until)
            self.paused_until = until
            # Not every turn booked before the 429 at its end at once: every lane books again, spaced.
            for bucket in self.buckets.values():
                bucket.restart(until)
            self._epoch += 1
        return pause

    def corrected(self, estimate: Mapping[Kind, float], actual: Mapping[Kind, float]) -> None:
        """The reply's counts: what the estimate over-debited is credited back, what it missed is
        debited now."""
        now = self.clock()
        for kind, used in actual.items():
            difference = used - estimate.get(kind, 0.0)
            bucket = self.buckets[kind]
            if difference > 0:
                bucket.debit(difference, now)
            else:
                bucket.credit(-difference)
            self.stats.used[kind] = self.stats.used.get(kind, 0.0) + used
        self.stats.tokens += int(actual.get("tokens", 0.0))

    def answered(self, latency_s: float) -> None:
        self.stats.answered += 1
        self.stats.latency_s += latency_s
        for bucket in self.buckets.values():
            bucket.headroom = min(SAFETY, bucket.headroom + HEADROOM_STEP)

    def limits(self) -> dict[str, float]:
        """The per-minute limits in force, by kind (those known)."""
        return {kind: b.per_minute for kind, b in self.buckets.items() if b.per_minute}


_PACERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], Pacer]] = (
    weakref.WeakKeyDictionary()
)


def pacer_for(provider: str, model: str, *, rpm: float | None, tpm: float | None) -> Pacer:
    """The one pacer of this provider and model in the running event loop (each asyncio.run, so each
    job, starts its own); a later caller's settings lower the limits, never raise them."""
    pacers = _PACERS.setdefault(asyncio.get_running_loop(), {})
    pacer = pacers.get((provider, model))
    if pacer is None:
        pacer = pacers[(provider, model)] = Pacer(rpm=rpm, tpm=tpm)
        return pacer
    for kind, value in (("requests", rpm), ("tokens", tpm)):
        bucket = pacer.buckets[kind]  # type: ignore[index]
        if value and (bucket.setting is None or value < bucket.setting):
            bucket.setting = value
    return pacer
