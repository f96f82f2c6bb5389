"""giant against a real OpenAI-compatible server no one here wrote: `transformers serve` with a tiny
random LLaVA built at test time (tests/realserver/tiny_vlm.py), through the real openai SDK.

What the server does with `response_format`, several images and a prompt past the model's context is
detected here, and docs/open-models.md must say the same (its transformers row), so a release that
changes it fails a test instead of a campaign. The server's access log counts the requests it got.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
from pathlib import Path
from typing import Any, Literal

import openai
import pytest
from PIL import Image

import giant.config  # noqa: F401  (registers the `tools: all` option parse_agent's defaults compose)
from giant.agent.modes import parse_agent
from giant.errors import ConfigError
from giant.eval.context_fit import check_server, context_fit, image_need
from giant.llm.config import provider_settings
from giant.llm.preflight import preflight
from giant.llm.providers.openai_compatible import OpenAICompatibleSettings
from giant.llm.providers.openai_compatible.provider import OpenAICompatibleProvider
from giant.llm.serve import Server
from giant.llm.types import FatalProviderError, ParseError
from tests.llm.conftest import make_conversation, make_ctx
from tests.realserver.served import requests_seen
from tests.realserver.tiny_vlm import CONTEXT, IMAGE_TOKENS

# One worker runs every real-server test (make test: --dist loadgroup), so they share one server.
# The session server takes tens of seconds to start on two busy cores: slow.
pytestmark = [pytest.mark.xdist_group("realserver"), pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "open-models.md"
T3 = parse_agent({"mode": "giant", "max_steps": 3, "crop_size": 256})
SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "step",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"answer": {"type": "string", "enum": ["A", "B"]}},
            "required": ["answer"],
            "additionalProperties": False,
        },
    },
}
Handling = Literal["honoured", "ignored", "refused"]


def settings(server: Server, model: Path | str, **extra: object) -> OpenAICompatibleSettings:
    cfg = provider_settings("openai_compatible", model=str(model), base_url=server.base_url, **extra)
    assert isinstance(cfg, OpenAICompatibleSettings)
    return cfg


def client(server: Server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0, timeout=120)


def image_part(shade: int) -> dict[str, Any]:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), (shade, 90, 120)).save(out, format="JPEG")
    url = "data:image/jpeg;base64," + base64.b64encode(out.getvalue()).decode()
    return {"type": "image_url", "image_url": {"url": url}}


def ask(server: Server, model: Path, images: int = 0, text: str = "Which shape?", **extra: Any) -> Any:
    content = [{"type": "text", "text": text}, *(image_part(40 * i) for i in range(images))]
    return client(server).chat.completions.create(
        model=str(model), messages=[{"role": "user", "content": content}], **extra
    )


def posts(server: Server) -> int:
    return requests_seen(server)[0]


def documented(finding: str) -> str:
    """What the guide's transformers row says about `finding` (its table's rows: finding, vLLM,
    transformers)."""
    for line in GUIDE.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] == finding:
            return cells[2]
    raise AssertionError(f"{GUIDE} has no row '{finding}' in its server table")


def response_format_handling(server: Server, model: Path) -> Handling:
    """A schema a random model cannot meet by chance: a 4xx is refused, a reply that validates is
    honoured (constrained decoding), any other reply is ignored."""
    try:
        reply = ask(server, model, response_format=SCHEMA, max_tokens=12)
    except (openai.BadRequestError, openai.UnprocessableEntityError):
        return "refused"
    text = reply.choices[0].message.content or ""
    try:
        honoured = json.loads(text).get("answer") in ("A", "B")
    except (ValueError, AttributeError):
        honoured = False
    return "honoured" if honoured else "ignored"


# ----------------------------------------------------------------------------- the preflight


def test_the_preflight_proves_the_model_with_its_images_and_says_the_context_is_unconfirmed(
    tserve: Server, tiny_vlm: Path, caplog: pytest.LogCaptureFixture
) -> None:
    before = posts(tserve)

    class Holder:
        max_model_len: int | None = None

    holder = Holder()
    with caplog.at_level("WARNING", logger="giant.eval.context_fit"):
        check_server(settings(tserve, tiny_vlm), T3, holder)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("preflight:")]
    assert lines == [
        f"preflight: {tserve.base_url} answered provider.model={tiny_vlm} with 3 image(s); not confirmed: "
        "the context length (unknown: set provider.max_model_len to check prompts against it)"
    ]
    assert holder.max_model_len is None
    assert posts(tserve) == before + 1  # one image request, as many images as a T=3 prompt carries
    facts = preflight(settings(tserve, tiny_vlm), image_need(T3))
    assert facts.models == (str(tiny_vlm),) and facts.max_model_len is None


def test_the_dry_run_marks_the_context_unknown_or_takes_the_setting(tserve: Server, tiny_vlm: Path) -> None:
    unknown = context_fit([], T3, settings(tserve, tiny_vlm))
    assert unknown is not None and unknown.max_model_len is None and unknown.rows == []
    assert unknown.render()[0].startswith("context fit: max_model_len unknown (the server does not report it")
    told = context_fit([], T3, settings(tserve, tiny_vlm, max_model_len=CONTEXT))
    assert told is not None and told.max_model_len == CONTEXT and told.rows


def test_a_model_name_the_server_refuses_stops_with_one_line(tserve: Server, tiny_vlm: Path) -> None:
    with pytest.raises(ConfigError) as err:
        preflight(settings(tserve, "tiny/other"), image_need(T3))
    assert str(err.value) == (
        f"provider.model=tiny/other is not served at provider.base_url={tserve.base_url} (Server is pinned "
        f"to '{tiny_vlm}'; requested 'tiny/other'.); it serves: {tiny_vlm} (pass one of them as "
        "provider.model)"
    )


# ----------------------------------------------------------------------------- what the server does


def test_several_images_in_one_request_each_add_their_tokens_to_the_usage(
    tserve: Server, tiny_vlm: Path
) -> None:
    counted = {n: ask(tserve, tiny_vlm, images=n, max_tokens=1).usage for n in (0, 1, 2, 6)}
    prompt = {n: usage.prompt_tokens for n, usage in counted.items()}
    assert {n - 0: prompt[n] - prompt[0] for n in (1, 2, 6)} == {n: n * IMAGE_TOKENS for n in (1, 2, 6)}
    assert all(u.completion_tokens == 1 and u.total_tokens == u.prompt_tokens + 1 for u in counted.values())
    said = documented("images per request")
    assert said.startswith("any number"), said  # 6 here; the preflight sends as many as the agent will


def test_response_format_is_detected_and_the_guide_says_the_same(tserve: Server, tiny_vlm: Path) -> None:
    found = response_format_handling(tserve, tiny_vlm)
    assert documented("`response_format`").startswith(found), found


def test_a_reply_cut_at_max_tokens_is_a_parse_error_with_its_usage(tserve: Server, tiny_vlm: Path) -> None:
    reply = ask(tserve, tiny_vlm, images=1, max_tokens=3)
    assert reply.choices[0].finish_reason == "length" and reply.usage.completion_tokens == 3

    async def turn() -> None:
        provider = OpenAICompatibleProvider(settings(tserve, tiny_vlm, max_tokens=3, max_retries=0))
        try:
            await provider.next_turn(make_conversation(2), make_ctx())
        finally:
            await provider.client.close()

    with pytest.raises(ParseError, match=r"finish_reason=length") as err:
        asyncio.run(turn())
    assert err.value.usage is not None and err.value.usage.output_tokens == 3
    assert err.value.usage.input_tokens > 2 * IMAGE_TOKENS


def test_a_prompt_past_the_context_is_served_and_only_giant_stops_it(tserve: Server, tiny_vlm: Path) -> None:
    """The server does not refuse a prompt longer than max_position_embeddings (its usage says how
    long); with provider.max_model_len set, giant ends the call itself before sending it."""
    long_text = " ".join(["tumour stroma necrosis"] * CONTEXT)
    reply = ask(tserve, tiny_vlm, text=long_text, max_tokens=1)
    assert reply.usage.prompt_tokens > CONTEXT
    assert documented("prompt past the context").startswith("served"), "the guide says otherwise"
    before = posts(tserve)

    async def turn() -> None:
        provider = OpenAICompatibleProvider(settings(tserve, tiny_vlm, max_model_len=CONTEXT, max_retries=0))
        conversation = make_conversation(1)
        conversation.messages[0].parts[0].text = long_text  # type: ignore[union-attr]
        try:
            await provider.next_turn(conversation, make_ctx())
        finally:
            await provider.client.close()

    with pytest.raises(FatalProviderError, match=rf"max_model_len {CONTEXT};") as err:
        asyncio.run(turn())
    assert err.value.cause == "context"
    assert posts(tserve) == before


def test_the_guide_names_the_server_and_when_to_prefer_it() -> None:
    text = GUIDE.read_text()
    assert "server=transformers" in text and "Prefer `transformers serve` for" in text
