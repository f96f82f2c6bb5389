"""The shared pacer (giant.llm.pacer) on an injected clock, and the rate-limit headers it reads
(giant.llm.ratelimit_headers) in OpenAI's, Anthropic's and Gemini's styles. No test here waits."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import pytest
from google.genai import errors as genai_errors

from giant.llm.pacer import BURST_S, SAFETY, Pacer
from giant.llm.providers.gemini.errors import classify as classify_gemini
from giant.llm.ratelimit_headers import duration_s, read_limits
from giant.llm.types import TransientError


def no_wait_clock() -> tuple[Callable[[], float], Callable[[float], Awaitable[None]]]:
    """A clock whose sleep advances it at once: the pacer's waits without waiting."""
    now = [0.0]

    def clock() -> float:
        return now[0]

    async def sleep(seconds: float) -> None:
        now[0] += max(0.0, seconds)

    return clock, sleep


def starts(pacer: Pacer, n: int, cost: dict[str, float] | None = None, now: float = 0.0) -> list[float]:
    return [pacer.reserve(cost or {}, now) for _ in range(n)]  # type: ignore[arg-type]


def most_in_one_second(times: list[float]) -> int:
    return max(sum(t <= s < t + 1.0 for s in times) for t in times)


@pytest.mark.parametrize("rpm", [60, 600, 6000])
def test_concurrent_requests_are_spaced_at_most_a_seconds_worth_at_once(rpm: int) -> None:
    async def go() -> list[float]:
        pacer = Pacer(rpm=rpm)
        pacer.clock, pacer.sleep = no_wait_clock()
        pacer.finished(True)  # past the first request
        left = []
        for start in starts(pacer, 3 * rpm // 60 + 5):  # booked by lanes at once
            await pacer.sleep(max(0.0, start - pacer.clock()))
            await pacer.depart({"requests": 1.0})
            left.append(pacer.clock())
        return left

    times = asyncio.run(go())
    assert most_in_one_second(times) <= max(1, rpm // 60)  # never a minute's burst
    per_s = rpm / 60
    # Over the whole run: never faster than the limit, and no slower than the pacer's own rate.
    assert (len(times) - per_s) / per_s <= times[-1] <= len(times) / (per_s * SAFETY)


def test_a_request_larger_than_a_seconds_worth_goes_alone_then_the_next_waits_for_it() -> None:
    pacer = Pacer(tpm=600)  # 10 tokens a second
    first, second = starts(pacer, 2, {"tokens": 50})
    assert first == 0.0
    assert second == pytest.approx(50 / (600 / 60 * SAFETY))


def test_a_429_pauses_every_lane_until_the_named_reset_and_counts_once() -> None:
    pacer = Pacer()
    clock, _ = no_wait_clock()
    pacer.clock = clock
    assert pacer.throttled(2.5) == 2.5
    pacer.throttled(1.0)  # a second lane's 429 inside the first pause adds no paused time
    assert all(start == 2.5 for start in starts(pacer, 4))  # no limit known: all go when it ends
    assert pacer.stats.throttled == 2 and pacer.stats.paused_s == pytest.approx(2.5)


def test_a_429_that_names_no_reset_backs_off_doubling_and_halves_the_slow_start() -> None:
    pacer = Pacer()
    pacer.clock, _ = no_wait_clock()
    pacer._window = 8
    assert [pacer.throttled(None) for _ in range(3)] == [1.0, 2.0, 4.0]
    assert pacer._window == 1.0
    pacer.observe(200, {})
    assert pacer.throttled(None) == 1.0  # an answer ends the streak


def test_headers_set_the_limit_and_the_lower_of_setting_and_server_wins() -> None:
    slower = Pacer(rpm=30)
    faster = Pacer(rpm=120)
    unset = Pacer()
    headers = {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "59"}
    for pacer in (slower, faster, unset):
        pacer.observe(200, headers)
        pacer.finished(True)
    assert slower.limits()["requests"] == 30
    assert faster.limits()["requests"] == 60
    assert unset.limits()["requests"] == 60 and unset._window == float("inf")  # no slow start once known


def test_the_first_request_goes_alone_then_every_lane_once_a_limit_is_known() -> None:
    configured, unknown = Pacer(rpm=60), Pacer()
    assert configured._window == unknown._window == 1  # a setting too: the first reply is awaited
    configured.finished(False)  # a failure lets nobody else go
    assert configured._window == 1
    configured.finished(True)
    unknown.finished(True)
    assert configured._window == float("inf")
    assert unknown._window == 2  # no limit known yet: one more in flight


def test_remaining_below_a_seconds_worth_holds_the_bucket() -> None:
    pacer = Pacer(rpm=600)
    clock, _ = no_wait_clock()
    pacer.clock = clock
    pacer.observe(200, {"x-ratelimit-remaining-requests": "0"})
    (start,) = starts(pacer, 1)
    rate = 600 / 60 * SAFETY
    assert start == pytest.approx(BURST_S - (rate * BURST_S - 1) / rate)  # one request's refill


@pytest.mark.parametrize(("reset", "seconds"), [("6m0s", 360.0), ("250ms", 0.25), ("1.5s", 1.5)])
def test_a_429_with_an_exhausted_bucket_pauses_until_its_reset(reset: str, seconds: float) -> None:
    pacer = Pacer()
    pacer.clock, _ = no_wait_clock()
    pacer.observe(429, {"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": reset})
    assert pacer.throttled(None) == pytest.approx(seconds)  # to the millisecond, not whole seconds


def test_the_replys_count_corrects_the_estimate() -> None:
    pacer = Pacer(tpm=6000)  # 100 tokens a second
    estimate = {"tokens": 300.0}
    first = pacer.reserve(estimate, 0.0)  # type: ignore[arg-type]
    pacer.corrected(estimate, {"tokens": 100.0})  # type: ignore[arg-type]
    assert first == 0.0
    assert pacer.reserve({"tokens": 100.0}, 0.0) < 300 / (100 * SAFETY) - BURST_S + 1e-9  # type: ignore[arg-type]
    assert pacer.stats.tokens == 100


def test_unknown_limits_start_with_one_request_in_flight_then_one_more_per_answer() -> None:
    async def go() -> list[int]:
        pacer = Pacer()
        pacer.clock, pacer.sleep = no_wait_clock()
        in_flight: list[int] = []
        live = 0

        async def lane() -> None:
            nonlocal live
            await pacer.acquire({})
            live += 1
            in_flight.append(live)
            await asyncio.sleep(0)
            live -= 1
            pacer.finished(True)

        await asyncio.gather(*(lane() for _ in range(6)))
        return in_flight

    seen = asyncio.run(go())
    assert seen[0] == 1 and max(seen) < 6  # the first alone, never all at once


# ----------------------------------------------------------------------------- the three styles


def test_openai_headers() -> None:
    limits = read_limits(
        {
            "X-RateLimit-Limit-Requests": "500",
            "x-ratelimit-remaining-requests": "499",
            "x-ratelimit-reset-requests": "120ms",
            "x-ratelimit-limit-tokens": "500000",
            "x-ratelimit-remaining-tokens": "0",
            "x-ratelimit-reset-tokens": "1m30.5s",
        },
        wall_now=0.0,
    )
    assert limits.limit == {"requests": 500, "tokens": 500000}
    assert limits.remaining == {"requests": 499, "tokens": 0}
    assert limits.reset == {"requests": pytest.approx(0.12), "tokens": pytest.approx(90.5)}
    assert limits.reset_of_exhausted() == pytest.approx(90.5)


def test_anthropic_headers() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    limits = read_limits(
        {
            "anthropic-ratelimit-requests-limit": "50",
            "anthropic-ratelimit-requests-remaining": "49",
            "anthropic-ratelimit-requests-reset": "2026-01-01T00:00:01Z",
            "anthropic-ratelimit-input-tokens-limit": "30000",
            "anthropic-ratelimit-output-tokens-limit": "8000",
            "anthropic-ratelimit-tokens-reset": "2026-01-01T00:00:03+00:00",
            "retry-after": "3",
        },
        wall_now=now,
    )
    assert limits.limit == {"requests": 50, "input_tokens": 30000, "output_tokens": 8000}
    assert limits.reset == {"requests": 1.0, "tokens": 3.0}


@pytest.mark.parametrize("value", ["soon", "-", "1x", ""])
def test_a_reset_that_does_not_parse_is_ignored(value: str) -> None:
    assert duration_s(value, wall_now=0.0) is None
    assert (
        read_limits(
            {"x-ratelimit-reset-requests": value, "x-ratelimit-limit-requests": "x"}, wall_now=0
        ).reset
        == {}
    )


def test_gemini_429_names_its_pause_and_its_per_minute_limit() -> None:
    details = [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [
                {"quotaId": "GenerateRequestsPerMinutePerProjectPerModel", "quotaValue": "15"},
                {"quotaId": "GenerateContentInputTokensPerModelPerMinute", "quotaValue": "250000"},
            ],
        },
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "26s"},
    ]
    body = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota", "details": details}}
    error = classify_gemini(genai_errors.ClientError(429, body), secret=None)
    assert isinstance(error, TransientError) and error.cause == "rate_limit"
    assert error.retry_after_s == 26.0
    assert error.limits == {"requests": 15.0, "input_tokens": 250000.0}
    pacer = Pacer()
    pacer.clock, _ = no_wait_clock()
    assert pacer.throttled(error.retry_after_s, error.limits) == 26.0
    assert pacer.limits() == {"requests": 15.0, "input_tokens": 250000.0}


def test_a_lane_that_leaves_late_holds_the_next_one() -> None:
    async def go() -> tuple[float, float, float]:
        pacer = Pacer(rpm=60)
        pacer.clock, pacer.sleep = no_wait_clock()
        pacer.finished(True)
        first, second = pacer.reserve({}, 0.0), pacer.reserve({}, 0.0)
        await pacer.sleep(first + 0.3)  # the first lane's event loop was busy: it leaves 0.3 s late
        await pacer.depart({"requests": 1.0})
        left_first = pacer.clock()
        await pacer.sleep(max(0.0, second - pacer.clock()))
        await pacer.depart({"requests": 1.0})
        return left_first, second, pacer.clock()

    left_first, booked, left_second = asyncio.run(go())
    assert booked - left_first < 1.0  # its booked turn would reach a 60/min server too early
    assert left_second - left_first >= 1.0  # it waits: never closer than the limit to the one before


def test_a_request_the_http_hook_departs_is_checked_once_and_others_pass() -> None:
    async def go() -> tuple[int, float]:
        pacer = Pacer(rpm=60)
        pacer.clock, pacer.sleep = no_wait_clock()
        await pacer.acquire({}, hooked=True)  # left for the hook: not yet departed
        assert not pacer.buckets["requests"].gone
        await pacer.depart()  # the hook
        await pacer.depart()  # a request the pacer did not book (a batch's): no wait, nothing left
        return pacer.stats.requests, len(pacer.buckets["requests"].gone)

    requests, gone = asyncio.run(go())
    assert requests == 1 and gone == 1


def test_a_429_that_teaches_the_limit_leaves_no_extra_room() -> None:
    pacer = Pacer()
    pacer.clock, _ = no_wait_clock()
    pacer.throttled(1.0, {"requests": 60.0})  # Gemini's QuotaFailure: the limit was not known before
    assert pacer.buckets["requests"].headroom == SAFETY
    pacer.throttled(1.0)
    assert pacer.buckets["requests"].headroom < SAFETY


def test_429s_at_a_known_limit_leave_more_room_and_answers_take_it_back() -> None:
    pacer = Pacer(rpm=60)
    pacer.clock, _ = no_wait_clock()
    rate = pacer.buckets["requests"].rate
    pacer.throttled(1.0)
    slower = pacer.buckets["requests"].rate
    assert rate is not None and slower is not None and slower < rate
    for _ in range(1000):
        pacer.answered(1.0)
    assert pacer.buckets["requests"].rate == pytest.approx(rate)
