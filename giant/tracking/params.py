"""The resolved config as MLflow params: dotted leaf keys, values as short strings, never secrets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from giant.roles import flatten
from giant.secrets import REDACTED, is_secret_key, scrub

ELLIPSIS = "..."


def to_params(data: Mapping[str, Any], *, secrets: list[str], max_length: int) -> dict[str, str]:
    """Params for `log_params`: secret-looking keys are redacted, secret values scrubbed, long values
    cut (the full config is logged as an artifact)."""
    params = {}
    for key, value in flatten(data).items():
        text = REDACTED if is_secret_key(key) and value not in (None, "") else scrub(str(value), secrets)
        if len(text) > max_length:
            text = text[: max_length - len(ELLIPSIS)] + ELLIPSIS
        params[key] = text
    return params
