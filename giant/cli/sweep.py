"""What a sweep (`-m`) launches, read from the composed config before any job starts, and which of
Hydra's plugins runs it.

`sweep_jobs` expands the command line and `hydra.sweeper.params` into every job's overrides as
Hydra's basic sweeper does (a cartesian product, in the order the keys first appear; a later
override of a key replaces the earlier one in place), through Hydra's public override parser only,
so that no module but `giant.confdir.compose` reaches into `hydra._internal`.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from omegaconf import DictConfig

if TYPE_CHECKING:
    from hydra.core.override_parser.types import Override


def plugin_name(node: DictConfig) -> str:
    """The class name of the Hydra plugin a config node names (`hydra.launcher`, `hydra.sweeper`):
    BasicLauncher, JoblibLauncher, BasicSweeper, ... ("" when it names none)."""
    return str(node.get("_target_", "")).rpartition(".")[2]


def expand(overrides: list[Override]) -> list[list[str]]:
    """Every job's overrides, as Hydra's basic sweeper launches them: each key's values (one, or a
    choice, range or glob sweep's), combined as a cartesian product in the order the keys first
    appear. An interval sweep cannot be enumerated: the basic sweeper's error."""
    from hydra.errors import HydraException

    values: dict[str, list[str]] = {}
    for override in overrides:
        key = override.get_key_element()
        if not override.is_sweep_override():
            values[key] = [f"{key}={override.get_value_element_as_str()}"]
        elif override.is_discrete_sweep():
            values[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:
            kind = override.value_type.name if override.value_type else "?"
            raise HydraException(f"BasicSweeper does not support sweep type : {kind}")
    return [list(job) for job in itertools.product(*values.values())]


def sweep_jobs(config: DictConfig) -> list[list[str]]:
    """The override list of every job Hydra's basic sweeper will launch ([] for other sweepers).
    A glob over a group's options (`dataset='glob(tcga*)'`) reads them through the running app's
    config loader, as the sweeper does."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if plugin_name(config.hydra.sweeper) != "BasicSweeper":
        return []
    params = config.hydra.sweeper.get("params") or {}
    arguments = [f"{key}={value}" for key, value in params.items()] + list(config.hydra.overrides.task)
    app = GlobalHydra.instance()
    parser = OverridesParser.create(config_loader=app.config_loader() if app.is_initialized() else None)
    return expand(parser.parse_overrides(arguments))


def swept_settings(config: DictConfig) -> dict[str, set[str]]:
    """The settings the command line sweeps (`agent.max_steps=5,10,20`) and their values: keys with two
    or more values across the jobs. Group choices (`agent=giant,paper`) are left to the jobs' params."""
    values: dict[str, set[str]] = {}
    for job in sweep_jobs(config):
        for override in job:
            key, _, value = override.partition("=")
            values.setdefault(key.lstrip("+~"), set()).add(value)
    return {key: seen for key, seen in sorted(values.items()) if len(seen) > 1 and "." in key}
