"""The providers' prompt-caching rules, for the dry run's forecast (no SDK, no key).

A request is a sequence of segments (system prompt, question, each image, each earlier answer), each
with an identity, so two requests share a prefix exactly as long as their segments agree. A rule
takes the requests of one item in the order they are sent (one cache key: the item) and says, per
request, how many input tokens are read from the cache and how many are written to it; the rest
is billed as plain input. Each provider class names its rule next to its image-token formula
(`cache_rule`), as the providers bill differently:
- OpenAI caches automatically: the longest prefix shared with an earlier request, once it is at least
  1024 tokens long, in 128-token steps; there is no write surcharge.
- Anthropic caches only up to the cache_control breakpoints we place (the system prompt and the
  newest image): a request reads the longest prefix that an earlier request wrote at one of its
  breakpoints, and writes (at the write rate) from there up to its own last breakpoint.
The rules are estimates of the billing, not of the cache's eviction: every entry is assumed alive
for the few minutes an item takes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

OPENAI_MIN_PREFIX = 1024  # shorter prompts are never cached
OPENAI_STEP = 128  # a cache hit grows in steps of this many tokens
ANTHROPIC_MIN_PREFIX = 1024  # Sonnet/Opus; below it a breakpoint writes nothing


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


NO_CACHE = CacheSplit(0, 0)
# requests of one item in order, whether the provider's prompt_caching setting is on -> split per request
CacheRule = Callable[[Sequence[Request], bool], list[CacheSplit]]


def no_caching(requests: Sequence[Request], enabled: bool = True) -> list[CacheSplit]:
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


def openai_prefix(requests: Sequence[Request], enabled: bool = True) -> list[CacheSplit]:
    """OpenAI's automatic cache (on whether or not prompt_cache_key is sent)."""
    seen: set[int] = set()  # every prefix of an earlier request
    splits = []
    for request in requests:
        prefixes = _prefixes(request)
        shared = max((tokens for identity, tokens in prefixes if identity in seen), default=0)
        read = shared // OPENAI_STEP * OPENAI_STEP if shared >= OPENAI_MIN_PREFIX else 0
        splits.append(CacheSplit(read, 0))
        seen.update(identity for identity, _ in prefixes)
    return splits


def anthropic_breakpoints(requests: Sequence[Request], enabled: bool = True) -> list[CacheSplit]:
    """Anthropic's explicit cache: nothing without breakpoints (provider.prompt_caching=false)."""
    if not enabled:
        return no_caching(requests)
    written: set[int] = set()  # prefixes an earlier request ended with a breakpoint
    splits = []
    for request in requests:
        prefixes = _prefixes(request)
        read = max((tokens for identity, tokens in prefixes if identity in written), default=0)
        marks = [
            prefix
            for prefix, segment in zip(prefixes, request.segments, strict=True)
            if segment.breakpoint and prefix[1] >= ANTHROPIC_MIN_PREFIX
        ]
        written.update(identity for identity, _ in marks)
        splits.append(CacheSplit(read, max(0, marks[-1][1] - read) if marks else 0))
    return splits
