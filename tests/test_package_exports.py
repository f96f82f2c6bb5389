"""Every package of giant names its public entry points in `__init__` (`__all__`), every name there
resolves, and the lazy exports (PEP 562) keep the light packages light: importing a package root does
not load what its public names need (MLflow, pandas, OpenSlide, the providers' SDKs)."""

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
def test_every_package_names_its_public_entry_points(name: str) -> None:
    package = importlib.import_module(name)
    exported = getattr(package, "__all__", None)
    assert isinstance(exported, list) and exported, f"{name}/__init__.py has no __all__"
    assert len(set(exported)) == len(exported), f"{name}.__all__ names a name twice"
    for public in exported:
        value = getattr(package, public)  # a lazy export resolves through the package's __getattr__
        assert value is not None, f"{name}.{public}"
        # a name that is also a submodule would be shadowed by the module once that is imported
        sub = importlib.util.find_spec(f"{name}.{public}") if hasattr(package, "__path__") else None
        assert sub is None or value is sys.modules.get(f"{name}.{public}"), f"{name}.{public}"


def test_an_unknown_name_is_an_attribute_error() -> None:
    for name in ("giant.llm", "giant.eval", "giant.tracking", "giant.tracking.tables"):
        with pytest.raises(AttributeError):
            _ = importlib.import_module(name).no_such_name


def test_package_roots_stay_light() -> None:
    """A fresh interpreter importing every lazily exporting package root (and giant.config) loads none
    of the heavy dependencies their public names pull in."""
    roots = ["giant.config", "giant.llm", "giant.eval", "giant.data", "giant.data.fetch", "giant.compare"]
    roots += ["giant.tracking", "giant.tracking.tables"]
    heavy = ["mlflow", "pandas", "openslide", "matplotlib", "openai", "anthropic", "httpx2", "kaggle"]
    code = f"import sys\nfor m in {roots!r}: __import__(m)\nprint([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout
