"""Every package root of giant is plain (issue 40: no lazy roots): what it re-exports it imports,
every name of its `__all__` resolves, and the roots whose modules pull heavy dependencies
re-export nothing, so importing a package root does not load MLflow, pandas, OpenSlide or the
providers' SDKs (a light module below it, giant.data.defects, stays light)."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import giant

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(["giant", *(m.name for m in pkgutil.walk_packages(giant.__path__, "giant.") if m.ispkg)])


def test_the_package_list_is_whole() -> None:
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "giant").rglob("__init__.py")}
    assert set(PACKAGES) == on_disk
    assert {"giant.llm", "giant.eval", "giant.tracking", "giant.tracking.tables"} <= on_disk


@pytest.mark.parametrize("name", PACKAGES)
def test_every_package_root_is_plain(name: str) -> None:
    package = importlib.import_module(name)
    assert "__getattr__" not in vars(package), f"{name}/__init__.py exports lazily; import plainly"
    exported = getattr(package, "__all__", [])
    assert isinstance(exported, list), f"{name}.__all__"
    assert len(set(exported)) == len(exported), f"{name}.__all__ names a name twice"
    for public in exported:
        value = getattr(package, public)
        assert value is not None, f"{name}.{public}"
        # a name that is also a submodule would be shadowed by the module once that is imported
        sub = importlib.util.find_spec(f"{name}.{public}") if hasattr(package, "__path__") else None
        assert sub is None or value is sys.modules.get(f"{name}.{public}"), f"{name}.{public}"


def test_package_roots_stay_light() -> None:
    """A fresh interpreter importing the package roots whose modules pull heavy dependencies (and
    giant.config, the providers' registry home, a light record) loads none of them."""
    roots = [
        "giant.config",
        "giant.llm",
        "giant.llm.providers",
        "giant.eval",
        "giant.data",
        "giant.data.fetch",
    ]
    roots += ["giant.compare", "giant.tracking", "giant.tracking.tables", "giant.agent", "giant.data.defects"]
    heavy = ["mlflow", "pandas", "openslide", "matplotlib", "openai", "anthropic", "httpx2", "kaggle"]
    code = f"import sys\nfor m in {roots!r}: __import__(m)\nprint([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout
