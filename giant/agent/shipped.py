"""An agent mode's settings as conf/ ships them, for code that builds them without the CLI (library
use, tests, benchmarks, a re-score of a record written before a setting existed).

Every agent default lives in conf/ (conf/agent_common.yaml, conf/agent/<mode>.yaml; S follows
conf/provider/<name>.yaml's crop_size) and the settings models hold types and checks only, so a value
is written once. The mode's file is composed by Hydra itself, as the CLI composes it, so its
`defaults:` list and the provider's S resolve exactly as in a run.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from omegaconf import OmegaConf

from giant.confdir import compose, group_options


def shipped_agent(mode: str, provider: str | None = None) -> dict[str, Any]:
    """conf/'s values for `mode` with `provider`'s S (None: the provider conf/config.yaml picks);
    empty for a mode without a conf/agent file (one registered by library code)."""
    return copy.deepcopy(_composed(mode, provider))


@functools.cache
def _composed(mode: str, provider: str | None) -> dict[str, Any]:
    if mode not in group_options("agent"):
        return {}
    cfg = compose("config", [f"agent={mode}", *([f"provider={provider}"] if provider else [])])
    values = OmegaConf.to_container(cfg.agent, resolve=True)
    assert isinstance(values, dict)
    return {str(key): value for key, value in values.items()}
