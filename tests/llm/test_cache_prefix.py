"""Issue 15: inside an episode the request prefix never changes, so every call reads the previous one
from the provider's prompt cache. Checked on the real wire bodies of whole episodes (real SDKs, real
slides, tests/llm/wire_episode.py), and under each provider's caching rule (giant.llm.caching, the
model the dry run and benchmarks/cache_billing.py use)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from giant.core import Item
from giant.llm.caching import (
    VLLM_BLOCK,
    CacheSplit,
    Request,
    Segment,
    anthropic_breakpoints,
    anthropic_min_prefix,
    openai_prefix,
    vllm_prefix,
    wire_request,
)
from giant.llm.config import ProviderConfig, provider_settings
from giant.llm.factory import provider_class
from giant.llm.image_tokens import anthropic_pixels
from giant.wsi.synthetic import write_synthetic_slide
from tests.llm.conftest import make_image
from tests.llm.wire_episode import Policy, answer_at, run_wire_episode

WIDTH, HEIGHT = 6000, 4000
S = 1000  # images large enough that the first request passes the providers' 1024-token minimum
ITEM = Item(
    benchmark="tcga_slidebench",
    benchmark_id="15",
    image_path="slide.svs",
    prompt='Which tissue is this?\n1. a\n2. b\n3. c\n4. d\nAnswer as {"answer": N}.',
    options=("a", "b", "c", "d"),
    truth=2,
    metric="accuracy",
)
OPUS_4_1 = {"model": "claude-opus-4-1"}  # caches from 1024 tokens (Opus 4.5 only from 4096)
PROVIDERS = {
    "openai-structured": ("openai", {"protocol": "structured"}),
    "openai-tools": ("openai", {"protocol": "tools"}),
    "anthropic-structured": ("anthropic", {"protocol": "structured", **OPUS_4_1}),
    "anthropic-structured-no-thinking": (
        "anthropic",
        {"protocol": "structured", "thinking_budget": None, **OPUS_4_1},
    ),
    "anthropic-tools": ("anthropic", {"protocol": "tools", **OPUS_4_1}),
    "compatible-json-schema": ("openai_compatible", {"json_schema": True}),
    "compatible-schema-in-prompt": ("openai_compatible", {"json_schema": False}),
}
COMPATIBLE = {"model": "qwen2.5-vl", "base_url": "http://127.0.0.1:8000/v1"}


@pytest.fixture(scope="module")
def slide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_synthetic_slide(tmp_path_factory.mktemp("slide") / "slide.svs", WIDTH, HEIGHT, seed=15)


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")


def settings(case: str) -> ProviderConfig:
    name, overrides = PROVIDERS[case]
    return provider_settings(name, **(COMPATIBLE if name == "openai_compatible" else {}), **overrides)


def episode(case: str, slide: Path, policy: Policy, **agent: Any) -> list[dict[str, Any]]:
    traj, bodies = run_wire_episode(
        settings(case), ITEM, slide, policy, size=(WIDTH, HEIGHT), crop_size=S, **agent
    )
    assert traj.status == "answered", traj.reason
    if agent["mode"] != "authors":  # a crop at step T is refused by the agent with a corrective message
        due = range(agent["max_steps"], len(bodies) + 1)
        assert traj.corrections == sum(policy(n) == "crop" for n in due)
    return bodies


def unmarked(value: Any) -> Any:
    """The body without Anthropic's cache_control markers (they say where to cache, not what)."""
    if isinstance(value, dict):
        return {k: unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [unmarked(v) for v in value]
    return value


def extends(earlier: dict[str, Any], later: dict[str, Any]) -> bool:
    """`later` is `earlier` byte for byte (settings, tools, schema, system, every message, in order)
    with messages only added at the end."""
    a, b = unmarked(earlier), unmarked(later)
    key = "input" if "input" in a else "messages"
    settings_a, settings_b = ({k: v for k, v in body.items() if k != key} for body in (a, b))
    return json.dumps(settings_a) == json.dumps(settings_b) and b[key][: len(a[key])] == a[key]


def images(value: Any) -> int:
    """Image blocks in a body, whatever the API calls them."""
    if isinstance(value, dict):
        own = value.get("type") in ("input_image", "image", "image_url")
        return own + sum(images(v) for v in value.values())
    if isinstance(value, list):
        return sum(images(v) for v in value)
    return 0


def breaks(bodies: list[dict[str, Any]]) -> list[int]:
    """The 1-based call numbers whose request does not extend the previous one."""
    return [n + 2 for n, (a, b) in enumerate(itertools.pairwise(bodies)) if not extends(a, b)]


def crop_past_t(t: int) -> Policy:
    """A model that crops at step T too (rejected with a corrective) and then answers."""
    return lambda n: "answer" if n > t else "crop"


@pytest.mark.parametrize("case", list(PROVIDERS))
@pytest.mark.parametrize(
    ("mode", "policy"),
    [
        pytest.param("paper", crop_past_t(4), id="paper-crop-at-T"),
        pytest.param("giant", answer_at(4), id="giant"),
    ],
)
def test_every_call_extends_the_previous_request(case: str, mode: str, policy: Policy, slide: Path) -> None:
    """The forced answer at T (and the corrective after a crop at T) change only the newest message:
    schema, tools, tool_choice, system prompt and settings stay as they were."""
    bodies = episode(case, slide, policy, mode=mode, max_steps=4)
    assert len(bodies) == (5 if mode == "paper" else 4)
    assert breaks(bodies) == []


@pytest.mark.parametrize("case", list(PROVIDERS))
def test_each_call_reads_everything_the_previous_call_sent(case: str, slide: Path) -> None:
    """Under the provider's own caching rule: OpenAI reads the previous request down to its 128-token
    step, Anthropic reads it whole (a breakpoint sits where the previous call wrote), a vLLM server
    reuses it down to its KV block. Authors mode's restarts (calls 4 and 7: T=3 calls without an
    answer end an attempt) read the first attempt's opening call."""
    name, model = settings(case).name, settings(case).model
    bodies = episode(case, slide, lambda n: "answer" if n > 6 else "crop", mode="authors", max_steps=3)
    assert len(bodies) == 7 and bodies[3] == bodies[6] == bodies[0]  # a restart opens as the first call
    requests = [wire_request(body, provider_class(name).image_tokens) for body in bodies]
    rule, step = {"openai": (openai_prefix, 128), "anthropic": (anthropic_breakpoints, 1)}.get(
        name, (vllm_prefix, VLLM_BLOCK)
    )
    reads = [split.read for split in rule(requests, True, model)]
    previous = [requests[0].tokens, *(r.tokens for r in requests[:-1])]
    previous[3] = previous[6] = requests[0].tokens  # a restart shares the first call, then goes its way
    assert requests[0].tokens >= 1024
    assert reads[1:] == [tokens // step * step for tokens in previous[1:]]


def test_forced_answers_keep_the_prefix_in_paper_mode_under_the_cache_rule(slide: Path) -> None:
    """The final call, the longest of the item, reads all but its newest message (it read nothing
    when the schema changed at T)."""
    bodies = episode("openai-structured", slide, answer_at(5), mode="paper", max_steps=5)
    requests = [wire_request(body, provider_class("openai").image_tokens) for body in bodies]
    final = openai_prefix(requests, True)[-1]
    assert final.read == requests[-2].tokens // 128 * 128 > 0


@pytest.mark.parametrize("case", ["openai-structured", "anthropic-tools"])
def test_pruned_images_break_the_prefix_once_per_block(case: str, slide: Path) -> None:
    """max_images_in_context=3 (two crop images besides the overview): the prefix changes only at the
    calls where a block of old images is dropped, every second call past the third, not at every
    call past the third as a sliding window does; no request shows more than 3 images."""
    bodies = episode(case, slide, answer_at(9), mode="giant", max_steps=9, max_images_in_context=3)
    assert [images(body) for body in bodies] == [1, 2, 3, 2, 3, 2, 3, 2, 3]
    assert breaks(bodies) == [4, 6, 8]


@pytest.mark.parametrize(("gap", "read"), [(19, 1200), (20, 0)])
def test_anthropic_reads_a_write_only_within_20_blocks_of_a_breakpoint(gap: int, read: int) -> None:
    """Anthropic looks back at most 20 block boundaries from a breakpoint for an earlier write."""
    written = (Segment("head", 1200, breakpoint=True),)
    later = (Segment("head", 1200), *(Segment(f"block {i}", 10) for i in range(gap)))
    later = (*later[:-1], later[-1]._replace(breakpoint=True))
    splits = anthropic_breakpoints([Request(written, 0), Request(later, 1)], True)
    assert splits[1] == CacheSplit(read, 1200 + 10 * gap - read)


def test_wire_request_counts_images_by_formula_and_ignores_markers() -> None:
    image = make_image(size=(1000, 750))
    block = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/jpeg", "data": image.data_b64},
    }
    body = {"model": "m", "messages": [{"role": "user", "content": [block]}]}
    marked = {
        "model": "m",
        "messages": [{"role": "user", "content": [{**block, "cache_control": {"type": "x"}}]}],
    }
    plain, cached = (wire_request(b, anthropic_pixels) for b in (body, marked))
    assert [s.key for s in plain.segments] == [s.key for s in cached.segments]
    assert cached.segments[-1].breakpoint and not plain.segments[-1].breakpoint
    assert plain.segments[-1].tokens >= anthropic_pixels(1000, 750)


def test_anthropic_minimum_prefix_follows_the_model() -> None:
    """Opus 4.5 and Haiku 4.5 cache from 4096 tokens, Sonnet 4.5 from 1024: a 2000-token prefix is
    written for one and billed as plain input for the other (a dated snapshot counts as its model)."""
    first = Request((Segment("prefix", 2000, breakpoint=True),), 0)
    assert anthropic_breakpoints([first], True, "claude-sonnet-4-5") == [CacheSplit(0, 2000)]
    assert anthropic_breakpoints([first], True, "claude-opus-4-5-20251101") == [CacheSplit(0, 0)]
    assert anthropic_min_prefix("claude-haiku-4-5") == 4096


@pytest.mark.parametrize("case", ["anthropic-structured", "anthropic-tools"])
def test_anthropic_final_call_reads_everything_and_writes_nothing(case: str, slide: Path) -> None:
    """The call that must answer is meant to be the last: it reads all the previous call sent and
    marks no new breakpoint (a write costs 1.25x and nothing would read it)."""
    provider = settings(case)
    bodies = episode(case, slide, answer_at(4), mode="paper", max_steps=4)
    requests = [wire_request(body, provider_class("anthropic").image_tokens) for body in bodies]
    splits = anthropic_breakpoints(requests, True, provider.model)
    assert splits[-1] == CacheSplit(requests[-2].tokens, 0)
    assert splits[-2].write > 0  # the calls before write for the next one


@pytest.mark.parametrize("case", ["anthropic-structured", "anthropic-tools"])
def test_anthropic_drops_read_the_part_before_them(case: str, slide: Path) -> None:
    """max_images_in_context=5: a drop hides four steps' images at once, more than 20 blocks before
    the newest image in tools mode; the drop calls (6 and 10) still read everything before the first
    image they hide, and no request has more than the API's 4 breakpoints."""
    provider = settings(case)
    bodies = episode(case, slide, answer_at(12), mode="giant", max_steps=12, max_images_in_context=5)
    assert max(json.dumps(body).count("cache_control") for body in bodies) <= 4
    requests = [wire_request(body, provider_class("anthropic").image_tokens) for body in bodies]
    splits = anthropic_breakpoints(requests, True, provider.model)
    assert breaks(bodies) == [6, 10]
    assert splits[5].read > requests[0].tokens and splits[9].read > splits[5].read
