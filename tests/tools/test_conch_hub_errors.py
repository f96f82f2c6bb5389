"""Each way a Hub download of CONCH fails, told apart by huggingface_hub's exception types and the
HTTP status (never by the text of a message), becomes its own one-line ConfigError."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from huggingface_hub import errors

from giant.errors import ConfigError
from giant.tools.conch.load import _download
from giant.tools.conch.settings import ConchSettings

REPO = "MahmoodLab/CONCH"
TOKEN_ENV = "GIANT_TEST_CONCH_TOKEN"


def _response(status: int) -> httpx2.Response:
    return httpx2.Response(status, request=httpx2.Request("GET", f"https://huggingface.co/{REPO}"))


def _fail_with(monkeypatch: pytest.MonkeyPatch, exc: Exception) -> None:
    def download(**_: Any) -> str:
        raise exc

    monkeypatch.setattr("huggingface_hub.hf_hub_download", download)


def _settings() -> ConchSettings:
    return ConchSettings(
        weights=REPO, tokenizer=None, max_hypotheses=8, device="cpu", hf_token_env=TOKEN_ENV, seed=0
    )


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (errors.GatedRepoError("gated", response=_response(401)), "access denied (GatedRepoError)"),
        (errors.RepositoryNotFoundError("nope", response=_response(404)), "access denied"),
        (errors.HfHubHTTPError("forbidden", response=_response(403)), "access denied (HfHubHTTPError)"),
        # a server error whose text happens to hold "401" is no denial
        (errors.HfHubHTTPError("500 (request id 4019)", response=_response(500)), "could not download"),
        (errors.LocalEntryNotFoundError("offline"), "is not in the Hugging Face cache"),
        (ConnectionError("reset by peer"), "could not download pytorch_model.bin (ConnectionError"),
    ],
)
def test_each_hub_failure_is_its_own_line(
    monkeypatch: pytest.MonkeyPatch, exc: Exception, expected: str
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    _fail_with(monkeypatch, exc)
    with pytest.raises(ConfigError) as info:
        _download(_settings(), "pytorch_model.bin")
    line = str(info.value)
    assert line.startswith(f"tools.conch.weights={REPO}: ") and expected in line and "\n" not in line
    assert line.endswith("tools.conch.weights=/path/to/pytorch_model.bin")
    assert ("access denied" in line) == (f"set {TOKEN_ENV}" in line)  # no token: say which variable


def test_a_file_the_repo_lacks_gets_its_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    _fail_with(monkeypatch, errors.RemoteEntryNotFoundError("404", response=_response(404)))
    with pytest.raises(ConfigError, match=rf"^{REPO} has no tok\.json: fetch it by hand$"):
        _download(_settings(), "tok.json", missing_hint="fetch it by hand")
    with pytest.raises(ConfigError, match=r"could not download tok\.json"):
        _download(_settings(), "tok.json")  # no hint for this file: the generic line
