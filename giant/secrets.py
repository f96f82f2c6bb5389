"""Keeping secrets out of MLflow and the job record: keys only ever come from the environment, so
anything that looks like a secret variable's value is redacted wherever it would be logged (params,
tags, artifacts, a job's outcome line). Credentials written into a URL setting (`user:pass@`, a
`?api-key=`) are redacted from every record, log line and file the same way, and a key pasted where a
variable's name belongs is refused unseen. Core: config, tracking, giant.cli and the job log build on it."""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Mapping

REDACTED = "***"
MIN_SECRET_LENGTH = 8  # shorter values ("1", "true") would redact half of every config
_SECRET_NAME = re.compile(r"key|token|secret|passw|credential|auth", re.IGNORECASE)
# A config key holding a secret itself (not `api_key_env`, which names the variable, nor `max_tokens`).
_SECRET_KEY = re.compile(r"(^|[._-])(api_?key|key|token|secret|password|passwd|credentials?)$", re.IGNORECASE)


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names look secret, longest first."""
    env = os.environ if environ is None else environ
    found = {
        value for name, value in env.items() if _SECRET_NAME.search(name) and len(value) >= MIN_SECRET_LENGTH
    }
    return sorted(found, key=len, reverse=True)


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(key))


def scrub(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def contains_secret(data: bytes, secrets: list[str]) -> bool:
    return any(secret.encode() in data for secret in secrets)


# Credentials written into a URL setting (`provider.base_url=https://user:pass@host/v1?api-key=...`):
# not environment values, so `scrub` cannot know them; every URL in a text is redacted instead.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
_QUERY_PAIR = re.compile(r"(^|[&;])([^=&;#]*)=([^&;#]*)")
_SECRET_PARAM = re.compile(
    r"key|token|secret|signature|passw|credential|auth|^(sig|pwd|pass|code)$", re.IGNORECASE
)


def redact_url(url: str) -> str:
    """`url` with its userinfo (`user:pass@`) and the values of its secret-named query keys (`api-key`,
    `token`, `sig`, ...) as ***; anything else kept as written."""
    scheme, sep, rest = url.partition("://")
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:
        authority = f"{REDACTED}@{authority.rpartition('@')[2]}"
    path, qmark, query = tail.partition("?")
    if qmark:
        query, hash_, fragment = query.partition("#")
        query = _QUERY_PAIR.sub(
            lambda m: f"{m[1]}{m[2]}={REDACTED}" if m[3] and _is_secret_param(m[2]) else m[0], query
        )
        tail = f"{path}?{query}{hash_}{fragment}"
    return f"{scheme}{sep}{authority}{tail}"


def _is_secret_param(name: str) -> bool:
    return any(_SECRET_PARAM.search(part) for part in [*re.split(r"[-_.\[\]]", name), name])


def redact_urls(text: str) -> str:
    """Every URL in `text` through redact_url: for settings, overrides, log lines and error messages."""
    return _URL.sub(lambda m: redact_url(m[0]), text) if "://" in text else text


def redact(text: str, secrets: list[str]) -> str:
    """`text` without URL credentials nor the values of secret environment variables."""
    return scrub(redact_urls(text), secrets)


def redact_data(data: object) -> object:
    """JSON-like data (a settings record) with every URL in its strings redacted (redact_urls)."""
    if isinstance(data, str):
        return redact_urls(data)
    if isinstance(data, dict):
        return {key: redact_data(value) for key, value in data.items()}
    if isinstance(data, list):
        return [redact_data(value) for value in data]
    return data


# `provider.api_key_env` names a variable; a key pasted there instead must be refused without echoing
# it. A name is letters, digits and `_`; a key has other characters (`sk-...`), a known prefix, is 32
# characters or more in one word (hex keys among them), or is long with lower case, upper case and
# digits jumbled (random base62 switches between the three at about 6 characters in 10; CamelCase
# words with a number, `MyAzureOpenAIKey2West`, at under 5 in 10).
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEX = re.compile(r"[0-9a-fA-F]+")
KEY_PREFIXES = ("sk-", "sk_", "AIza", "xai-", "gsk_", "hf_", "ghp_", "pk-", "Bearer ")


KEY_VARIABLE_HINT = (
    "provider.api_key_env holds what looks like an API key, not the name of an environment variable "
    "(the value is not shown): put the key in the environment (export MY_API_KEY=...) and pass "
    "provider.api_key_env=MY_API_KEY"
)


def looks_like_key(value: str) -> bool:
    """True when `value` (given as an environment variable's name) looks like a key itself."""
    if value.startswith(KEY_PREFIXES) or not _VARIABLE_NAME.fullmatch(value):
        return True
    if len(value) >= 32 and ("_" not in value or _HEX.fullmatch(value)):  # no name is that long in one word
        return True
    kinds = ["l" if c.islower() else "u" if c.isupper() else "d" if c.isdigit() else "_" for c in value]
    if len(value) < 20 or not {"l", "u", "d"} <= set(kinds):
        return False
    switches = sum(a != b for a, b in itertools.pairwise(kinds))
    return switches / (len(value) - 1) >= 0.5
