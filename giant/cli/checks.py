"""The command line's checks before Hydra runs, shared by every script (run_eval, ask, fetch_slides,
rescore) and by giant.evaluate: an unknown option of a config group (`provider=opneai`) or a misspelt
key (`agent.maxsteps=3`) is one ConfigError line naming the fix (exit code 2), not Hydra's multi-line
report suggesting `+key=`. Overrides are read by Hydra's own parser, so every check sees one grammar.
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from giant.agent.modes import modes_with_setting
from giant.confdir import CONF_DIR, EVERY_TOOL, group_options, prepare
from giant.config import GROUPS, check_key_variable
from giant.errors import ConfigError, exit_with
from giant.llm.config import providers_with

if TYPE_CHECKING:  # Hydra's override parser is imported where used: it is slow to import
    from hydra.core.override_parser.types import Override


def parse_overrides(argv: list[str]) -> list[Override]:
    """The command line's overrides as Hydra will read them (one grammar for every check); bad
    syntax gives none, and Hydra then reports it itself."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    texts = [arg for arg in argv if not arg.startswith("-") and "=" in arg]
    try:
        return OverridesParser.create().parse_overrides(texts)
    except HydraException:
        return []


def check_group_choices(argv: list[str], conf_dir: Path = CONF_DIR) -> None:
    """An unknown option of one of our groups (`provider=opneai`) as one line, before Hydra runs."""
    from hydra.core.override_parser.types import OverrideType

    for override in parse_overrides(argv):
        key = override.key_or_group
        if key not in GROUPS or override.type == OverrideType.DEL or override.value() in (None, ""):
            continue
        options = group_options(key, conf_dir) + ([EVERY_TOOL] if key == "tools" else [])
        for choice in _group_choices(override):
            if choice not in options:
                raise ConfigError(f"unknown {key} '{choice}': choose one of {', '.join(options)}")


# Groups whose options have settings of their own: the function naming the options that have a
# setting, and the key that tells the options apart.
OWNED_SETTINGS: dict[str, tuple[Callable[[str], list[str]], str]] = {
    "agent": (modes_with_setting, "mode"),
    "provider": (providers_with, "name"),
}


def check_key_overrides(argv: list[str]) -> None:
    """`provider.api_key_env` on the command line holds no key (giant.config.check_key_variable), checked
    before Hydra writes the overrides into the job folder."""
    for override in parse_overrides(argv):
        if override.key_or_group.removeprefix("+").removeprefix("+") == "provider.api_key_env":
            if not override.is_sweep_override():
                check_key_variable(override.value())
            else:
                for value in override.sweep_string_iterator():
                    check_key_variable(value)


def check_command_line(prog: str, config_name: str, argv: list[str]) -> None:
    """Both checks every entrypoint runs before Hydra: an unknown group option or a misspelt key is
    one line naming the fix and exit code 2 (Hydra's own reports are longer and suggest `+key=`).
    First, what conf/ needs besides its files is registered (giant.confdir.prepare) for the Hydra app
    that composes it next: importing giant configures nothing."""
    prepare()
    try:
        check_key_overrides(argv)  # first: a key typed in the wrong place is never shown nor written
        check_group_choices(argv)
        check_override_keys(argv, config_name)
    except ConfigError as err:
        exit_with(prog, str(err))


def check_override_keys(argv: list[str], config_name: str = "config", conf_dir: Path = CONF_DIR) -> None:
    """A misspelt key (`agent.maxsteps=3`) as one line naming the closest key, before Hydra runs
    (Hydra's own report is six lines and suggests `+key=`, which validation then rejects)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.types import OverrideType

    prepare()
    overrides = parse_overrides(argv)
    choices: dict[str, list[str]] = {}
    keys: list[str] = []
    for override in overrides:
        key = override.key_or_group
        if key in GROUPS:
            if override.type == OverrideType.CHANGE:
                choices[key] = _group_choices(override)
        elif override.type == OverrideType.CHANGE and not key.startswith("hydra.") and "/" not in key:
            keys.append(key)
    if not keys:
        return
    groups = sorted(group for group, values in choices.items() if values)
    configs = []
    with initialize_config_dir(str(conf_dir), version_base="1.3"):
        for picked in itertools.product(*(choices[group] for group in groups)):
            group_overrides = [f"{group}={value}" for group, value in zip(groups, picked, strict=True)]
            configs.append(compose(config_name, overrides=group_overrides))
    for key in keys:
        group, _, setting = key.partition(".")
        owners_of, tag = OWNED_SETTINGS.get(group, (None, ""))
        owners = owners_of(setting) if owners_of else []
        lacking = sorted(
            {str(OmegaConf.select(c, f"{group}.{tag}")) for c in configs if not _has_key(c, key)}
        )
        if owners and lacking:
            raise ConfigError(
                f"{key} is a setting of {group}={','.join(owners)} only, not of {group}={','.join(lacking)}: "
                f"pick one of those {group} options or drop the key"
            )
        if not any(_has_key(cfg, key) for cfg in configs):
            known = sorted({name for cfg in configs for name in _dotted_keys(cfg)})
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise ConfigError(
                f"unknown key '{key}': no such setting{hint} (add --cfg job to the command to list every key)"
            )


def _has_key(cfg: DictConfig, key: str) -> bool:
    node: Any = cfg
    for part in key.split("."):
        if not isinstance(node, DictConfig):
            return True  # inside a list or a leaf value: left to validation
        if part not in list(node):  # `in` is False for a `???` value, which is still a key
            return False
        node = node._get_node(part)
    return True


def _dotted_keys(cfg: DictConfig, prefix: str = "") -> list[str]:
    names = []
    for key in cfg:
        name = f"{prefix}{key!s}"
        if name == "hydra":
            continue
        names.append(name)
        node = cfg._get_node(str(key))
        if isinstance(node, DictConfig):
            names.extend(_dotted_keys(node, f"{name}."))
    return names


def _group_choices(override: Override) -> list[str]:
    """The options a group override picks, read by Hydra's own parser: one value, or the `a,b` and
    `choice(a,b)` sweeps; other sweeps (glob, range, interval) are left to Hydra."""
    if not override.is_sweep_override():
        return [override.get_value_element_as_str()]
    from hydra.core.override_parser.types import ValueType

    if override.is_choice_sweep() and override.value_type != ValueType.GLOB_CHOICE_SWEEP:
        return list(override.sweep_string_iterator())
    return []
