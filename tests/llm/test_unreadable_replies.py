"""A 200 whose body is no reply (not JSON, empty, a proxy's HTML page) is the server's fault: each
provider raises a TransientError with cause `server` (retried by giant.llm.retry, unmeasured if it
lasts), never an exception nothing classifies, and the ledger keeps nothing of it.

Through the real openai SDK (Responses API and OpenAI-compatible chat) against httpx2.MockTransport,
and the real google-genai SDK against the loopback Gemini server.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx2
import pytest

from giant.llm.config import ProviderConfig, provider_settings
from giant.llm.factory import build_provider
from giant.llm.ledger import Ledger
from giant.llm.types import TransientError
from tests.llm.conftest import make_conversation, make_ctx
from tests.llm.gemini_server import KEY, GeminiServer, serving

BODIES = {
    "not JSON": (b"<html><body>502 Bad Gateway</body></html>", "application/json"),
    "empty": (b"", "application/json"),
    "an HTML page": (b"<html><body>502 Bad Gateway</body></html>", "text/html"),
}
SDK_PROVIDERS = {
    "openai": provider_settings("openai", model="gpt-5"),
    "openai_compatible": provider_settings("openai_compatible", model="m", base_url="http://127.0.0.1:9/v1"),
}


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-unreadable")
    monkeypatch.setenv("GEMINI_API_KEY", KEY)


def _fails(cfg: ProviderConfig, client: httpx2.AsyncClient | None, ledger: Ledger) -> TransientError:
    async def go() -> None:
        provider = build_provider(cfg, http_client=client, ledger=ledger)
        await provider.next_turn(make_conversation(), make_ctx())

    with pytest.raises(TransientError) as failed:
        asyncio.run(go())
    return failed.value


@pytest.mark.parametrize("provider", list(SDK_PROVIDERS))
@pytest.mark.parametrize("body", list(BODIES))
def test_a_200_that_is_no_reply_is_a_server_fault_retried_and_never_kept(
    provider: str, body: str, tmp_path: Path
) -> None:
    content, kind = BODIES[body]
    requests: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        requests.append(request)
        return httpx2.Response(200, content=content, headers={"content-type": kind})

    cfg = SDK_PROVIDERS[provider].model_copy(update={"max_retries": 1})
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    ledger = Ledger(tmp_path / "ledger")
    error = _fails(cfg, client, ledger)  # type: ignore[arg-type]
    assert error.cause == "server" and "answered 200 with" in str(error)
    assert len(requests) == 2  # sent again once, as a 5xx is (provider.max_retries=1)
    assert not any((tmp_path / "ledger").rglob("*.json"))  # nothing to replay on the rerun


@pytest.mark.parametrize("body", [b"<html>502 Bad Gateway</html>", b"", b"{}"])
def test_a_gemini_200_that_is_no_reply_is_a_server_fault(body: bytes, tmp_path: Path) -> None:
    server = GeminiServer(answer_at=1)
    server.fail = [(200, body)] * 2
    with serving(server) as url:
        cfg = provider_settings("gemini", base_url=url, max_retries=1)
        error = _fails(cfg, None, Ledger(tmp_path / "ledger"))
    assert error.cause == "server" and "answered 200 with" in str(error)
    assert len(server.requests) == 2 and not any((tmp_path / "ledger").rglob("*.json"))
