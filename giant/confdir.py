"""The project's conf/ folder: where it is, which options each config group offers, and the one function
that composes it outside a running Hydra app (`compose`).

The bottom of the config layer, read by giant.config (the run's settings), giant.agent.shipped (an
agent mode's shipped values) and the docs tooling alike. What the entry configs need besides the YAML
files (the `${giant_root:}` resolver and the `tools: all` option) is registered here by `prepare`, so
composing works in a fresh interpreter whatever was imported before.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from omegaconf import DictConfig

PROJECT_ROOT = Path(__file__).resolve().parents[1]
CONF_DIR = PROJECT_ROOT / "conf"

# The `tools` option conf/config.yaml and conf/ask.yaml compose: every tool's settings file.
EVERY_TOOL = "all"


def group_options(group: str, conf_dir: Path = CONF_DIR) -> list[str]:
    return sorted(path.stem for path in (conf_dir / group).glob("*.yaml"))


def compose_every_tool(conf_dir: Path = CONF_DIR) -> None:
    """Offer the option `tools: all` (Hydra's ConfigStore), whose defaults list is every
    conf/tools/<name>.yaml, each at `tools.<name>`: a defaults list cannot glob a folder, and this way a
    new tool's file is composed without naming it anywhere else. The entry configs name no tool."""
    from hydra.core.config_store import ConfigStore

    names = [name for name in group_options("tools", conf_dir) if name != EVERY_TOOL]
    node = {"defaults": [*(f"{name}@{name}" for name in names), "_self_"]}
    ConfigStore.instance().store(group="tools", name=EVERY_TOOL, node=node)


def prepare() -> None:
    """Register what conf/ needs besides its files, before anything composes it (the CLI's Hydra app,
    `compose`, a test's `initialize_config_dir`): conf/config.yaml hangs its default paths off the
    project root (`${giant_root:}`), not the working directory, and its tools come from `tools: all`."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("giant_root"):
        OmegaConf.register_new_resolver("giant_root", lambda: str(PROJECT_ROOT))
    compose_every_tool()


def compose(config_name: str, overrides: Sequence[str] = (), conf_dir: Path = CONF_DIR) -> DictConfig:
    """conf/<config_name>.yaml with `overrides`, composed as the CLI composes it (its
    `hydra` section included, as `hydra.compose(..., return_hydra_config=True)` keeps it).

    The one place that touches Hydra's loader: `hydra.compose` needs the global Hydra instance, which a
    running job or a test's `initialize_config_dir` (perhaps of another conf folder) already holds."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.utils import create_config_search_path
    from hydra.types import RunMode

    prepare()
    loader = ConfigLoaderImpl(config_search_path=create_config_search_path(str(conf_dir)))
    return loader.load_configuration(config_name, list(overrides), run_mode=RunMode.RUN)


__all__ = [
    "CONF_DIR",
    "EVERY_TOOL",
    "PROJECT_ROOT",
    "compose",
    "compose_every_tool",
    "group_options",
    "prepare",
]
