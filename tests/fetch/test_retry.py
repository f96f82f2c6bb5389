"""Slide downloads under the shared retry policy (giant.retry): only transient failures are asked
again, a server's Retry-After is waited for, other waits are jittered above a floor, and a
resumed download keeps its bytes across the retries."""

from __future__ import annotations

import itertools
import time
from email.utils import formatdate
from pathlib import Path

import pytest
from tenacity import RetryCallState, Retrying

from giant.data.fetch.download import part_path
from giant.data.fetch.settings import FetchSettings
from giant.data.fetch.sources import Transient
from giant.retry import RETRY_AFTER_MAX_S, RetryPolicy, retry_after_s
from tests.fetch.conftest import GTEX_ID, SLIDE_A, SLIDE_GTEX, UUID_A, item
from tests.fetch.stub import Stub
from tests.fetch.test_fetch import DATA_A, fetch, md5

GDC_A = [item("tcga", 1, SLIDE_A, UUID_A)]


def gaps(stub: Stub, path: str) -> list[float]:
    """Seconds between consecutive requests for `path`: what the client waited (plus a round trip)."""
    return [b.at - a.at for a, b in itertools.pairwise(stub.data_requests(path))]


def test_a_429_with_retry_after_is_waited_for_then_succeeds(
    stub: Stub, settings: FetchSettings, tmp_path: Path
) -> None:
    stub.fail[DATA_A], stub.fail_status, stub.retry_after = 1, 429, "1"
    report = fetch(GDC_A, tmp_path, settings)
    assert report.ok, report.render()
    assert [r.status for r in stub.data_requests(DATA_A)] == [429, 200]
    (waited,) = gaps(stub, DATA_A)
    assert 1.0 <= waited < 1.5  # the server's second, not the 0.01 s backoff of these settings


def test_a_503_is_retried_with_jittered_waits_above_the_floor_then_reported(
    stub: Stub, settings: FetchSettings, tmp_path: Path
) -> None:
    """Windows [0.05, 0.2], [0.05, 0.4], [0.05, 0.8] s: a fixed doubling would wait their tops."""
    slow = settings.model_copy(update={"retries": 3, "backoff_s": 0.2, "backoff_min_s": 0.05})
    stub.fail[DATA_A], stub.fail_status = 10, 503
    report = fetch(GDC_A, tmp_path, slow)
    assert not report.ok
    assert (
        f"{SLIDE_A}: HTTP 503 from {stub.gdc_url}/data/{UUID_A} (gave up after 3 retries)"
        in report.outcomes[0].reason
    )
    assert [r.status for r in stub.data_requests(DATA_A)] == [503] * 4
    waits = gaps(stub, DATA_A)
    tops = [0.2, 0.4, 0.8]
    assert all(0.05 <= w < top + 0.1 for w, top in zip(waits, tops, strict=True)), waits
    assert any(abs(w - top) > 0.02 for w, top in zip(waits, tops, strict=True)), waits
    assert not (tmp_path / SLIDE_A).exists()


@pytest.mark.parametrize("status", [408, 429, 500, 502, 504])
def test_transient_statuses_are_retried(
    stub: Stub, settings: FetchSettings, tmp_path: Path, status: int
) -> None:
    stub.fail[DATA_A], stub.fail_status = 1, status
    assert fetch(GDC_A, tmp_path, settings).ok
    assert [r.status for r in stub.data_requests(DATA_A)] == [status, 200]


@pytest.mark.parametrize("status", [401, 403, 404])
def test_a_refusal_or_a_missing_file_is_asked_once(
    stub: Stub, settings: FetchSettings, tmp_path: Path, status: int
) -> None:
    stub.fail[DATA_A], stub.fail_status = 5, status
    report = fetch(GDC_A, tmp_path, settings)
    assert not report.ok
    assert f"{SLIDE_A}: HTTP {status} from {stub.gdc_url}/data/{UUID_A}" == report.outcomes[0].reason
    assert len(stub.data_requests(DATA_A)) == 1


def test_a_404_from_gdc_metadata_or_gtex_is_one_request(
    stub: Stub, settings: FetchSettings, tmp_path: Path
) -> None:
    missing = "00000000-0000-0000-0000-000000000000"
    items = [
        item("tcga", 1, "TCGA-XX.svs", missing),
        item("gtex", 1, "GTEX-NOPE-0001.tiff", "GTEX-NOPE-0001"),
    ]
    report = fetch(items, tmp_path, settings)
    assert [o.status for o in report.outcomes] == ["failed", "failed"]
    assert [r.status for r in stub.data_requests(f"/gdc/files/{missing}")] == [404]
    assert [r.status for r in stub.data_requests("/gtex/GTEX-NOPE-0001")] == [404]


def test_a_retried_resume_keeps_the_bytes_it_has(
    stub: Stub, settings: FetchSettings, source_slides: dict[str, Path], tmp_path: Path
) -> None:
    whole = source_slides[GTEX_ID].read_bytes()
    half = len(whole) // 2
    part_path(tmp_path / SLIDE_GTEX).write_bytes(whole[:half])
    path = f"/gtex/{GTEX_ID}"
    stub.fail[path], stub.fail_status = 2, 503
    assert fetch([item("gtex", 1, SLIDE_GTEX, GTEX_ID)], tmp_path, settings).ok
    requests = stub.data_requests(path)
    assert [(r.status, r.range) for r in requests] == [(503, f"bytes={half}-")] * 2 + [
        (206, f"bytes={half}-")
    ]
    assert requests[-1].sent == len(whole) - half
    assert md5(tmp_path / SLIDE_GTEX) == md5(source_slides[GTEX_ID])


def test_retry_after_reads_seconds_milliseconds_and_http_dates() -> None:
    assert retry_after_s({"retry-after": "7"}) == 7.0
    assert retry_after_s({"retry-after-ms": "250", "retry-after": "7"}) == 0.25
    in_a_minute = retry_after_s({"retry-after": formatdate(time.time() + 60, usegmt=True)})
    assert in_a_minute is not None and 58 <= in_a_minute <= 60
    assert retry_after_s({"retry-after": formatdate(time.time() - 60, usegmt=True)}) == 0.0
    assert retry_after_s({"retry-after": "soon"}) is None and retry_after_s({}) is None


def _wait_after(policy: RetryPolicy, exc: BaseException, attempt: int) -> float:
    state = RetryCallState(Retrying(), None, (), {})
    state.attempt_number = attempt
    state.set_exception((type(exc), exc, None))
    return policy.wait(state)


def test_the_policy_waits_jittered_above_its_floor_and_honours_retry_after() -> None:
    policy = RetryPolicy(retryable=(Transient,), asked=lambda e: getattr(e, "retry_after_s", None))
    draws = [_wait_after(policy, Transient("HTTP 503"), attempt=3) for _ in range(200)]
    assert all(policy.min_s <= w <= policy.base_s * 4 for w in draws)
    assert max(draws) - min(draws) > policy.base_s  # full jitter across the window [0.25, 4 s]
    assert _wait_after(policy, Transient("HTTP 429", retry_after_s=0.0), 1) == policy.min_s
    assert _wait_after(policy, Transient("HTTP 429", retry_after_s=5.0), 1) == 5.0
    too_long = _wait_after(policy, Transient("HTTP 429", retry_after_s=RETRY_AFTER_MAX_S + 1), 1)
    assert policy.min_s <= too_long <= policy.base_s  # a pause past the cap gets the first backoff
