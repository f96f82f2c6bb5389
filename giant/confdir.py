"""Where the project's conf/ folder is and which options each config group offers: the bottom of the
config layer, read by giant.config (the run's settings) and giant.agent.shipped (an agent mode's
shipped values) alike."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
CONF_DIR = PROJECT_ROOT / "conf"


def group_options(group: str, conf_dir: Path = CONF_DIR) -> list[str]:
    return sorted(path.stem for path in (conf_dir / group).glob("*.yaml"))


__all__ = ["CONF_DIR", "PROJECT_ROOT", "group_options"]
