"""The providers' prompt-caching rules, for the dry run's forecast (no SDK, no key).

A request is a sequence of segments (system prompt, question, each image, each earlier answer), each
with an identity, so two requests share a prefix exactly as long as their segments agree. A rule
takes the requests of one item in the order they are sent (one cache key: the item) and says, per
request, how many input tokens are read from the cache and how many are written to it; the rest
is billed as plain input. Each provider class names its rule next to its image-token formula
(`cache_rule`), as the providers bill differently, and where it places its breakpoints
(`cache_breakpoints`, on neutral `Block`s, so the dry run asks the provider's own rule):
- OpenAI caches automatically: the longest prefix shared with an earlier request, once it is at least
  1024 tokens long, in 128-token steps; there is no write surcharge.
- Anthropic caches only up to the cache_control breakpoints we place (the system prompt and the
  newest image): a request reads the longest prefix that an earlier request wrote at one of its
  breakpoints, and writes (at the write rate) from there up to its own last breakpoint.
- Anthropic looks back from each breakpoint over at most ANTHROPIC_LOOKBACK block boundaries for an
  earlier write, so a breakpoint far past the previous write reads nothing.
- An OpenAI-compatible server (vLLM's automatic prefix caching) reuses any shared prefix in blocks
  of VLLM_BLOCK tokens; its billing is unknown, so the dry run counts it as plain input.
The rules are estimates of the billing, not of the cache's eviction: every entry is assumed alive
for the few minutes an item takes.

The dry run builds its requests from a plan (giant/eval/dryrun.py); `wire_request` builds one from a
real request body, block by block, so the benchmark (benchmarks/cache_billing.py) applies the same
rules to what the providers actually send.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

from PIL import Image

OPENAI_MIN_PREFIX = 1024  # shorter prompts are never cached
OPENAI_STEP = 128  # a cache hit grows in steps of this many tokens
ANTHROPIC_MIN_PREFIX = 1024  # Sonnet 4.x, Opus 4/4.1; below it a breakpoint writes nothing
# Models with a larger minimum (Anthropic's prompt-caching page), matched by name prefix so a dated
# snapshot (claude-opus-4-5-20251101) counts as its model.
ANTHROPIC_MIN_PREFIX_BY_MODEL = {
    "claude-opus-4-5": 4096,
    "claude-opus-4-6": 4096,
    "claude-haiku-4-5": 4096,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
}
ANTHROPIC_LOOKBACK = 20  # block boundaries a breakpoint checks for an earlier write
VLLM_BLOCK = 16  # vLLM's default KV-cache block size in tokens
CHARS_PER_TOKEN = 4  # text tokens are estimated from characters (no tokenizer offline)
# The models OpenAI's prompt caching guide lists for extended retention ("24h", entries kept up to
# 24 hours at the same cache prices), as of 2026:
# https://developers.openai.com/api/docs/guides/prompt-caching#extended-prompt-cache-retention
OPENAI_EXTENDED_RETENTION = frozenset(
    {"gpt-5.5", "gpt-5.5-pro", "gpt-5.4", "gpt-5.2", "gpt-5.1-codex-max", "gpt-5.1", "gpt-5.1-codex"}
    | {"gpt-5.1-codex-mini", "gpt-5.1-chat-latest", "gpt-5", "gpt-5-codex", "gpt-4.1"}
)
_DATED = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")  # gpt-5-2025-08-07 is gpt-5


def openai_retention(setting: str | None, model: str, *, batch: bool) -> str | None:
    """The prompt_cache_retention an OpenAI request sends (provider.prompt_cache_retention), None for
    none: `auto` is "24h" in batch mode for a model OpenAI extends retention for, as rounds come back
    after in-memory entries (5-10 minutes) are gone, and nothing otherwise (synchronous calls are
    seconds apart; the server's default stays); any other setting as it is."""
    if setting != "auto":
        return setting
    extended = model in OPENAI_EXTENDED_RETENTION or _DATED.sub("", model) in OPENAI_EXTENDED_RETENTION
    return "24h" if batch and extended else None


class Segment(NamedTuple):
    key: str  # identity: the same content sent again has the same key
    tokens: int
    breakpoint: bool = False  # Anthropic: a cache_control mark ends this segment


@dataclass(frozen=True)
class Request:
    segments: tuple[Segment, ...]
    newest: int  # index of the first segment of the newest message (the rest was sent before)

    @property
    def tokens(self) -> int:
        return sum(segment.tokens for segment in self.segments)


class CacheSplit(NamedTuple):
    read: int  # input tokens billed at the cached rate
    write: int  # input tokens billed at the cache-write rate


class Block(NamedTuple):
    """One content block of a request, as a cache-breakpoint rule sees it."""

    message: int  # index of the message holding it
    role: str  # user | assistant
    type: str  # text, image, tool_result, thinking, ...


class Marks(NamedTuple):
    """Where a provider puts its cache breakpoints in one request."""

    blocks: tuple[int, ...]  # indices of the blocks that end with one
    system: bool  # the system prompt ends with one


# the request's blocks in order, whether this call's newest message is worth writing -> marks
BreakpointRule = Callable[[Sequence[Block], bool], Marks]


def no_breakpoints(blocks: Sequence[Block], write_newest: bool = True) -> Marks:
    """Providers that cache without being told where (or not at all) place no breakpoint."""
    return Marks((), False)


NO_CACHE = CacheSplit(0, 0)
# requests of one item in order, whether the provider's prompt_caching setting is on, the model ->
# split per request
CacheRule = Callable[[Sequence[Request], bool, str], list[CacheSplit]]


def no_caching(requests: Sequence[Request], enabled: bool = True, model: str = "") -> list[CacheSplit]:
    """Offline providers and servers whose billing we do not know: everything is plain input."""
    return [NO_CACHE for _ in requests]


def every_prefix_cached(requests: Sequence[Request]) -> list[CacheSplit]:
    """The lowest cost any cache could give: all but the newest message read from it, nothing written."""
    return [CacheSplit(sum(s.tokens for s in r.segments[: r.newest]), 0) for r in requests]


def _prefixes(request: Request) -> list[tuple[int, int]]:
    """(identity, tokens) of each prefix ending at a segment boundary, shortest first: the identity
    chains the segments' hashes, so comparing two prefixes costs one lookup."""
    identity, tokens, out = 0, 0, []
    for segment in request.segments:
        identity, tokens = hash((identity, segment.key, segment.tokens)), tokens + segment.tokens
        out.append((identity, tokens))
    return out


def _longest_shared(requests: Sequence[Request]) -> list[int]:
    """Per request, the tokens of its longest prefix that an earlier request also had."""
    seen: set[int] = set()  # every prefix of an earlier request
    shared = []
    for request in requests:
        prefixes = _prefixes(request)
        shared.append(max((tokens for identity, tokens in prefixes if identity in seen), default=0))
        seen.update(identity for identity, _ in prefixes)
    return shared


def openai_prefix(requests: Sequence[Request], enabled: bool = True, model: str = "") -> list[CacheSplit]:
    """OpenAI's automatic cache (on whether or not prompt_cache_key is sent)."""
    return [
        CacheSplit(shared // OPENAI_STEP * OPENAI_STEP if shared >= OPENAI_MIN_PREFIX else 0, 0)
        for shared in _longest_shared(requests)
    ]


def anthropic_min_prefix(model: str) -> int:
    return next(
        (tokens for name, tokens in ANTHROPIC_MIN_PREFIX_BY_MODEL.items() if model.startswith(name)),
        ANTHROPIC_MIN_PREFIX,
    )


def anthropic_breakpoints(
    requests: Sequence[Request], enabled: bool = True, model: str = ""
) -> list[CacheSplit]:
    """Anthropic's explicit cache: nothing without breakpoints (provider.prompt_caching=false). Each
    breakpoint reads the longest earlier write among the ANTHROPIC_LOOKBACK block boundaries that end
    at or before it, and writes (at the write rate) from there up to the request's last breakpoint,
    if that prefix reaches the model's minimum."""
    if not enabled:
        return no_caching(requests)
    minimum = anthropic_min_prefix(model)
    written: set[int] = set()  # prefixes an earlier request ended with a breakpoint
    splits = []
    for request in requests:
        prefixes = _prefixes(request)
        breakpoints = [i for i, segment in enumerate(request.segments) if segment.breakpoint]
        read = 0
        for end in breakpoints:
            window = prefixes[max(0, end - ANTHROPIC_LOOKBACK + 1) : end + 1]
            read = max([read, *(tokens for identity, tokens in window if identity in written)])
        marks = [prefixes[i] for i in breakpoints if prefixes[i][1] >= minimum]
        written.update(identity for identity, _ in marks)
        splits.append(CacheSplit(read, max(0, marks[-1][1] - read) if marks else 0))
    return splits


def vllm_prefix(requests: Sequence[Request], enabled: bool = True, model: str = "") -> list[CacheSplit]:
    """vLLM's automatic prefix caching: the longest prefix shared with an earlier request, in whole
    KV blocks. What a local server reuses (time, not money: billing stays `no_caching`)."""
    return [CacheSplit(shared // VLLM_BLOCK * VLLM_BLOCK, 0) for shared in _longest_shared(requests)]


# ----------------------------------------------------------------------------- real request bodies

ImageTokens = Callable[[int, int], int]
_MESSAGE_LISTS = ("input", "messages")  # OpenAI Responses / Anthropic and Chat Completions
_ASSISTANT_TYPES = ("function_call", "reasoning")  # OpenAI items the model produced


def wire_request(body: dict[str, Any], image_tokens: ImageTokens) -> Request:
    """A request body as the provider's cache sees it: first everything that is not a message (tools,
    output schema, tool_choice, reasoning and thinking settings, the instructions), then the system
    blocks, then each message block by block (an Anthropic tool_result's nested blocks one by one).
    A block's identity is its exact JSON, cache_control left out (a marker is not content); a block
    with cache_control is a breakpoint. Tokens: images by the provider's formula, text by characters."""
    head = {k: v for k, v in body.items() if k not in (*_MESSAGE_LISTS, "system")}
    segments = [Segment(_identity(head), _tokens(head, image_tokens))]
    system = body.get("system")
    if isinstance(system, list):
        for block in system:
            _blocks(block, image_tokens, segments)
    elif system is not None:
        segments.append(Segment(_identity(system), _tokens(system, image_tokens)))
    messages: list[Any] = next((body[k] for k in _MESSAGE_LISTS if isinstance(body.get(k), list)), [])
    newest = len(segments)
    for message in messages:
        if _from_model(message):
            newest = -1  # the newest message starts after the model's last turn
        elif newest < 0:
            newest = len(segments)
        _blocks(message, image_tokens, segments)
    return Request(tuple(segments), newest if newest >= 0 else len(segments))


def _from_model(message: Any) -> bool:
    return isinstance(message, dict) and (
        message.get("role") == "assistant" or message.get("type") in _ASSISTANT_TYPES
    )


def _blocks(value: Any, image_tokens: ImageTokens, out: list[Segment], shell: Segment | None = None) -> None:
    """A message or block as segments, one per content block (nested content or output lists
    included): a message's own fields (role, ids) are no block of their own and go into its first
    block's segment, so that Anthropic's lookback counts blocks. A cache_control marker makes the
    block's last segment a breakpoint."""
    marked = isinstance(value, dict) and "cache_control" in value
    nested_key = next(
        (k for k in ("content", "output") if isinstance(value, dict) and isinstance(value.get(k), list)), None
    )
    if nested_key is None:
        clean = {k: v for k, v in value.items() if k != "cache_control"} if marked else value
        out.append(_joined(shell, Segment(_identity(clean), _tokens(clean, image_tokens), breakpoint=marked)))
        return
    own = {k: v for k, v in value.items() if k not in (nested_key, "cache_control")}
    carried: Segment | None = _joined(shell, Segment(_identity(own), _tokens(own, image_tokens)))
    for child in value[nested_key]:
        _blocks(child, image_tokens, out, carried)
        carried = None
    if carried is not None:  # no nested block to carry it
        out.append(carried)
    if marked:
        out[-1] = out[-1]._replace(breakpoint=True)


def _joined(shell: Segment | None, segment: Segment) -> Segment:
    if shell is None:
        return segment
    return Segment(shell.key + segment.key, shell.tokens + segment.tokens, segment.breakpoint)


def _identity(value: Any) -> str:
    """The exact bytes (key order kept: a reordered field is a different prefix)."""
    return hashlib.sha256(json.dumps(value, separators=(",", ":")).encode()).hexdigest()


def _tokens(value: Any, image_tokens: ImageTokens) -> int:
    """Images by the provider's formula; every other string by its length."""
    if isinstance(value, dict):
        if value.get("type") == "base64" and isinstance(value.get("data"), str):  # Anthropic image source
            return _image(value["data"], image_tokens)
        return sum(_tokens(v, image_tokens) for v in value.values())
    if isinstance(value, list):
        return sum(_tokens(v, image_tokens) for v in value)
    if isinstance(value, str):
        if value.startswith("data:image/"):
            return _image(value.partition(",")[2], image_tokens)
        return max(1, len(value) // CHARS_PER_TOKEN)
    return 1


def _image(data_b64: str, image_tokens: ImageTokens) -> int:
    width, height = _image_size(data_b64)
    return image_tokens(width, height) if width and height else max(1, len(data_b64) // CHARS_PER_TOKEN)


@lru_cache(maxsize=4096)
def _image_size(data_b64: str) -> tuple[int, int]:
    """The JPEG's size from its header (PIL reads no pixels for this); (0, 0) when it is no image."""
    try:
        with Image.open(io.BytesIO(base64.b64decode(data_b64))) as image:
            return image.size
    except (binascii.Error, OSError):
        return (0, 0)
