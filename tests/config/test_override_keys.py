"""Misspelt command-line keys become one line before Hydra runs (outside any Hydra context)."""

from __future__ import annotations

import pytest

from giant.cli.checks import check_override_keys
from giant.errors import ConfigError


@pytest.mark.parametrize(
    ("argv", "config_name", "expected"),
    [
        (["foo=1"], "config", "unknown key 'foo'"),
        (["agent.maxsteps=3"], "config", "unknown key 'agent.maxsteps'.*did you mean agent.max_steps"),
        (
            ["-m", "agent=giant,thumbnail", "agent.thumbnail_sise=512"],
            "config",
            "unknown key 'agent.thumbnail_sise'",
        ),
        (["slide=a.svs", "questoin=hi"], "ask", "unknown key 'questoin'.*did you mean question"),
    ],
)
def test_unknown_override_key(argv: list[str], config_name: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected) as info:
        check_override_keys(argv, config_name)
    assert "\n" not in str(info.value)


def test_known_override_keys_pass() -> None:
    check_override_keys(
        [
            "-m",
            "agent=thumbnail",
            "agent.thumbnail_size=512",
            "agent.max_steps=1,5",
            "limit=2",
            "+extra=1",
            "hydra.run.dir=/tmp/x",
            "'item_ids=[demo_shapes/1]'".strip("'"),
            "--cfg",
            "job",
        ],
        "config",
    )
    check_override_keys(
        ["slide=a.svs", "question=hi", "options=[a,b]", "provider=scripted", "provider.script=s"], "ask"
    )
