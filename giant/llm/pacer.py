"""One pacer per provider and model, shared by every lane of a run: requests and tokens per minute.

Providers enforce a per-minute limit over much shorter periods (OpenAI: 60,000 RPM may be enforced as
1,000 per second), so a bucket that lets a whole minute's budget out at once gets most of it answered
429. Each limit here is a GCRA bucket (a "virtual scheduling" token bucket) holding at most one
second's worth (`BURST_S`): a request may start when the bucket's debt after it stays within that
second, so lanes are spaced at the limit's rate, never bunched.

Where the limits come from, per kind (requests, tokens, input tokens, output tokens):
- `provider.rpm` / `provider.tpm`, when set;
- the rate-limit headers of every reply (giant.llm.ratelimit_headers: OpenAI's `x-ratelimit-*`,
  Anthropic's `anthropic-ratelimit-*`, and whatever of these an OpenAI-compatible server sends).
  When a setting and a header disagree the lower limit wins: the server's number cannot be exceeded
  and a lower setting is the user's choice. `remaining` below one second's worth moves the bucket's
  debt to what the server says is left.
Until the first reply has been read the pacer lets one request out alone (for at most PROBE_WAIT_S),
so a run against unknown limits learns them before its lanes start at once.

A 429 (`throttled`) pauses every lane until the reset the server named (Retry-After, Gemini's
RetryInfo, the exhausted bucket's reset header) or, when it names none, a backoff that doubles with
each 429 in a row. The clock and the sleep are injected, so the tests drive it without waiting.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from giant.llm.ratelimit_headers import Limits, read_limits

Kind = Literal["requests", "tokens", "input_tokens", "output_tokens"]
KINDS: tuple[Kind, ...] = ("requests", "tokens", "input_tokens", "output_tokens")

BURST_S = 1.0  # a bucket holds at most this many seconds of its limit: a second's worth, never a minute's
SAFETY = 0.98  # pace a little under the limit, so the network's jitter does not bunch two requests
PROBE_WAIT_S = 30.0  # the longest the other lanes wait for the first reply's headers
BACKOFF_FIRST_S = 1.0  # a 429 that names no reset pauses 1 s, then 2, 4, ... up to BACKOFF_MAX_S
BACKOFF_MAX_S = 60.0


@dataclass
class Bucket:
    """One limit: `setting` (per minute, from the config) and `server` (per minute, from the headers);
    `tat` is when the bucket is full again (its debt is `tat - now` seconds)."""

    setting: float | None = None
    server: float | None = None
    tat: float = 0.0

    @property
    def per_minute(self) -> float | None:
        """The limit in force: the lower of the setting and the server's."""
        known = [v for v in (self.setting, self.server) if v]
        return min(known) if known else None

    @property
    def rate(self) -> float | None:
        per_minute = self.per_minute
        return per_minute / 60.0 * SAFETY if per_minute else None

    def start(self, units: float, now: float) -> float:
        """When `units` may go: when the debt after them is within one second (a request larger
        than a second's worth goes alone, once the bucket is full)."""
        rate = self.rate
        if rate is None or units <= 0:
            return now
        cost = units / rate
        return max(now, self.tat - max(0.0, BURST_S - cost))

    def debit(self, units: float, at: float) -> None:
        rate = self.rate
        if rate is not None and units:
            self.tat = max(self.tat, at) + units / rate

    def credit(self, units: float) -> None:
        """Units debited but not used (an estimate corrected by the reply); never below empty."""
        rate = self.rate
        if rate is not None and units:
            self.tat -= units / rate

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
    waited_s: float = 0.0  # seconds lanes spent waiting for the pacer, summed over lanes
    limits: dict[str, float] = field(default_factory=dict)  # the per-minute limits in force at the end


class Pacer:
    """Shared by every lane that calls one provider and model (`pacer_for`)."""

    def __init__(
        self,
        *,
        rpm: float | None = None,
        tpm: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        probe: bool = True,
    ) -> None:
        self.buckets: dict[Kind, Bucket] = {kind: Bucket() for kind in KINDS}
        self.buckets["requests"].setting = rpm
        self.buckets["tokens"].setting = tpm
        self.clock = clock
        self.sleep = sleep
        self.stats = PacerStats()
        self.paused_until = 0.0
        self._streak = 0  # 429s in a row, for the backoff when the server names no reset
        self._hint: float | None = None  # the reset a 429's headers named, in seconds from then
        self._learned = not probe
        self._probe: asyncio.Event | None = None

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

    async def acquire(self, cost: Mapping[Kind, float]) -> None:
        """Wait for this request's turn (and for any pause a 429 started meanwhile)."""
        began = self.clock()
        await self._wait_for_probe()
        start = self.reserve(cost, self.clock())
        while True:
            now = self.clock()
            wait = max(start, self.paused_until) - now
            if wait <= 0:
                break
            await self.sleep(wait)
        self.stats.requests += 1
        self.stats.waited_s += self.clock() - began

    async def _wait_for_probe(self) -> None:
        if self._learned:
            return
        if self._probe is None:  # this request is the probe; the others wait for its reply
            self._probe = asyncio.Event()
            return
        try:
            await asyncio.wait_for(self._probe.wait(), PROBE_WAIT_S)
        except TimeoutError:
            self.learned()

    def learned(self) -> None:
        """The first reply came (or the probe failed): every lane may go at the pace now known."""
        self._learned = True
        if self._probe is not None:
            self._probe.set()

    # ----------------------------------------------------------------------------- what servers say

    def observe(self, status: int, headers: Mapping[str, str]) -> None:
        """A reply's headers, read as it arrives (every reply, 429s too)."""
        now = self.clock()
        limits = read_limits(headers, wall_now=time.time())
        self._apply(limits, now)
        if status == 429:
            self._hint = limits.reset_of_exhausted()
        elif status < 400:
            self._streak = 0
        self.learned()

    def _apply(self, limits: Limits, now: float) -> None:
        for kind, limit in limits.limit.items():
            bucket = self.buckets[kind]
            if bucket.server != limit:
                bucket.server = limit
                bucket.tat = max(bucket.tat, now)  # a new rate starts from here, not from an old debt
        for kind, remaining in limits.remaining.items():
            self.buckets[kind].left(remaining, now)

    def throttled(self, asked_s: float | None) -> float:
        """A 429: every lane pauses until the reset the server named, else a doubling backoff. The
        pause's length is returned (the runtime also waits it before asking again)."""
        self.stats.throttled += 1
        self._streak += 1
        named = asked_s if asked_s is not None else self._hint
        self._hint = None
        pause = (
            named
            if named is not None
            else min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (self._streak - 1))
        )
        pause = max(pause, 1.0 / (self.buckets["requests"].rate or float("inf")), 0.05)
        now = self.clock()
        until = now + pause
        if until > self.paused_until:
            self.stats.paused_s += until - max(now, self.paused_until)
            self.paused_until = until
        self.learned()
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
        self.stats.tokens += int(actual.get("tokens", 0.0))

    def limits(self) -> dict[str, float]:
        """The per-minute limits in force, by kind (those known)."""
        return {kind: b.per_minute for kind, b in self.buckets.items() if b.per_minute}


def no_wait_clock() -> tuple[Callable[[], float], Callable[[float], Awaitable[None]]]:
    """A clock whose sleep advances it at once: for tests and the dry run's simulated pacing."""
    now = [0.0]

    def clock() -> float:
        return now[0]

    async def sleep(seconds: float) -> None:
        now[0] += max(0.0, seconds)

    return clock, sleep


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
