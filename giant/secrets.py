"""Keeping secrets out of MLflow and the job record: keys only ever come from the environment, so
anything that looks like a secret variable's value is redacted wherever it would be logged (params,
tags, artifacts, a job's outcome line). Core: tracking and giant.cli.outcomes both build on it."""

from __future__ import annotations

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
