"""The rate-limit headers providers send on every reply, read into per-minute limits (giant.llm.pacer).

- OpenAI (and OpenAI-compatible servers that copy it): `x-ratelimit-{limit,remaining,reset}-
  {requests,tokens}`; limits per minute, reset as a duration ("1s", "6m0s", "20ms", "1m30.5s").
- Anthropic: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,
  reset}`; limits per minute, reset as an RFC 3339 time.
Gemini sends none: its limits arrive only in a 429's RetryInfo (giant.llm.providers.gemini.errors).
A header that does not parse is ignored, never an error: pacing falls back to the settings.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

_KINDS = {
    "requests": "requests",
    "tokens": "tokens",
    "input-tokens": "input_tokens",
    "output-tokens": "output_tokens",
}
_OPENAI = re.compile(r"^x-ratelimit-(limit|remaining|reset)-(requests|tokens)$")
_ANTHROPIC = re.compile(
    r"^anthropic-ratelimit-(requests|tokens|input-tokens|output-tokens)-(limit|remaining|reset)$"
)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass
class Limits:
    """What one reply said, by pacer kind: `limit` per minute, `remaining` units, `reset` seconds
    from now until the bucket is full again."""

    limit: dict[str, float] = field(default_factory=dict)
    remaining: dict[str, float] = field(default_factory=dict)
    reset: dict[str, float] = field(default_factory=dict)

    def reset_of_exhausted(self) -> float | None:
        """The longest reset among the kinds with nothing left: when a 429's bucket has room again."""
        waits = [self.reset[k] for k, left in self.remaining.items() if left <= 0 and k in self.reset]
        return max(waits) if waits else None


def duration_s(value: str, *, wall_now: float) -> float | None:
    """A reset as OpenAI ("1m30.5s", "20ms"), Anthropic (an RFC 3339 time) or a plain number of
    seconds writes it; None when it is none of these."""
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        parts = _DURATION.findall(text)
        if parts and "".join(n + u for n, u in parts) == text:
            seconds = sum(float(n) * _UNIT_S[u] for n, u in parts)
        else:
            try:
                seconds = datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() - wall_now
            except ValueError:
                return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _number(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def read_limits(headers: Mapping[str, str], *, wall_now: float) -> Limits:
    """Every rate-limit header of a reply, in either provider's spelling (names in any case)."""
    limits = Limits()
    for raw_name, value in headers.items():
        name = raw_name.lower()
        if match := _OPENAI.match(name):
            field_name, kind = match[1], _KINDS[match[2]]
        elif match := _ANTHROPIC.match(name):
            kind, field_name = _KINDS[match[1]], match[2]
        else:
            continue
        parsed = duration_s(value, wall_now=wall_now) if field_name == "reset" else _number(value)
        if parsed is None or (field_name == "limit" and parsed <= 0):
            continue
        getattr(limits, field_name)[kind] = parsed
    return limits
