"""Each provider error names its cause, and only transient causes are sent again (one retry layer).

Through the real openai and anthropic SDKs against httpx2.MockTransport: the request count is what a
user pays for a refused key or a used-up quota.
"""

from __future__ import annotations

import itertools
import time

import httpx2
import pytest

from giant.llm.config import provider_settings
from giant.llm.types import FatalProviderError, ProviderError, TransientError
from giant.retry import BACKOFF_MIN_S
from tests.llm.mock_api import MockAPI, call, message, responses_body, step_json

OPENAI = provider_settings("openai", model="gpt-5").model_copy(update={"max_retries": 2})
ANTHROPIC = provider_settings("anthropic", model="claude-opus-4-5").model_copy(update={"max_retries": 2})
CROP = {"type": "crop", "x": 0, "y": 0, "width": 10, "height": 10}


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-causes")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-causes")


def _error(api: MockAPI, cfg: object) -> ProviderError:
    with pytest.raises(ProviderError) as err:
        call(api, cfg)  # type: ignore[arg-type]
    return err.value


@pytest.mark.parametrize(
    ("status", "body", "cause"),
    [
        (401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}, "key"),
        (403, {"error": {"message": "not allowed"}}, "key"),
        (
            404,
            {"error": {"message": "The model `gpt-9` does not exist", "code": "model_not_found"}},
            "model_name",
        ),
        # transformers serve started for another model (a FastAPI `detail` body)
        (400, {"detail": "Server is pinned to '/models/a'; requested 'gpt-9'."}, "model_name"),
        (
            429,
            {"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}},
            "quota",
        ),
        (400, {"error": {"message": "too long", "code": "context_length_exceeded"}}, "context"),
        (400, {"error": {"message": "Invalid image"}}, "bad_request"),
    ],
)
def test_openai_fatal_causes_are_sent_once(status: int, body: dict[str, object], cause: str) -> None:
    api = MockAPI(*[(status, body, {"retry-after-ms": "1"})] * 4)
    err = _error(api, OPENAI)
    assert isinstance(err, FatalProviderError) and err.cause == cause
    assert len(api.requests) == 1  # a quota 429 is billing, not pacing: never retried


@pytest.mark.parametrize(
    ("status", "cause"), [(429, "rate_limit"), (500, "server"), (503, "server"), (408, "rate_limit")]
)
def test_openai_transient_causes_are_retried_max_retries_times(
    status: int, cause: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("giant.llm.runtime.RATE_LIMIT_RETRIES", 2)  # rate limits: the pacer's retries
    api = MockAPI(*[(status, {"error": {"message": "busy"}}, {"retry-after-ms": "1"})] * 4)
    err = _error(api, OPENAI)
    assert isinstance(err, TransientError) and err.cause == cause
    assert len(api.requests) == 3  # 1 + 2 retries (max_retries=2 too), and the SDK adds none of its own


def test_retry_after_is_honoured_and_then_the_call_succeeds() -> None:
    api = MockAPI(
        (503, {"error": {"message": "busy"}}, {"retry-after": "0"}), responses_body(message(step_json(CROP)))
    )
    assert call(api, OPENAI).steps[0].action.type == "crop"
    assert len(api.requests) == 2


def test_anthropic_spent_balance_is_quota_and_overload_is_server() -> None:
    spent = (
        400,
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "Your credit balance is too low"},
        },
        {},
    )
    err = _error(MockAPI(spent, spent), ANTHROPIC)
    assert isinstance(err, FatalProviderError) and err.cause == "quota"
    overloaded = (
        529,
        {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
        {"retry-after-ms": "1"},
    )
    api = MockAPI(*[overloaded] * 3)
    err = _error(api, ANTHROPIC)
    assert isinstance(err, TransientError) and err.cause == "server" and len(api.requests) == 3


def test_anthropic_bad_key_is_key() -> None:
    denied = (
        401,
        {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}},
        {},
    )
    api = MockAPI(denied, denied)
    err = _error(api, ANTHROPIC)
    assert isinstance(err, FatalProviderError) and err.cause == "key" and len(api.requests) == 1


def test_connection_failure_is_network() -> None:
    cfg = OPENAI.model_copy(update={"base_url": "http://127.0.0.1:9/v1", "max_retries": 1, "timeout_s": 2.0})
    err = _error(None, cfg)  # type: ignore[arg-type]
    assert isinstance(err, TransientError) and err.cause == "network"


def test_a_server_down_gets_three_requests_at_least_a_quarter_second_apart() -> None:
    """The default provider.max_retries=2 against a server that answers 500 to everything."""
    api = MockAPI(*[(500, {"error": {"message": "down"}}, {})] * 5)
    sent: list[float] = []
    handler = api.handler

    def timed(request: httpx2.Request) -> httpx2.Response:
        sent.append(time.monotonic())
        return handler(request)

    api.handler = timed  # type: ignore[method-assign]
    err = _error(api, provider_settings("openai", model="gpt-5"))
    assert isinstance(err, TransientError) and err.cause == "server"
    assert len(sent) == 3
    assert min(b - a for a, b in itertools.pairwise(sent)) >= BACKOFF_MIN_S
