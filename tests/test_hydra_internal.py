"""Hydra's private modules (`hydra._internal`) are reached from one function of giant/ and scripts/
only, `giant.confdir.compose` (composing conf/ outside a running app needs Hydra's loader): every other
use goes through Hydra's public API, so a Hydra upgrade has one place to look. And Hydra itself is the
command line's (giant/cli/) and that composition's only: a job is a function of its settings and a
context of plain values (giant.context), never of Hydra's globals. Read with ast: plain, from- and
lazy imports, and `importlib.import_module("hydra...")` calls."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRIVATE = "hydra._internal"


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _private(node: ast.AST, prefix: str = PRIVATE) -> bool:
    if isinstance(node, ast.Import):
        return any(_within(alias.name, prefix) for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        parent, _, last = prefix.rpartition(".")
        return _within(module, prefix) or bool(
            parent and module == parent and any(a.name == last for a in node.names)
        )
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        return _within(str(node.args[0].value), prefix) and "import" in ast.unparse(node.func)
    return False


def users(source: str, name: str, prefix: str = PRIVATE) -> set[str]:
    """`name:function` (`name:<module>` at the top level) for each function reaching `prefix`
    (hydra._internal unless told)."""
    found: set[str] = set()

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, f"{name}:{child.name}")
                continue
            if _private(child, prefix):
                found.add(where)
            visit(child, where)

    visit(ast.parse(source), f"{name}:<module>")
    return found


def test_one_function_reaches_into_hydra_internal() -> None:
    found: set[str] = set()
    for folder in ("giant", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            found |= users(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())
    assert found == {"giant/confdir.py:compose"}, (
        f"hydra._internal used in {sorted(found)}: use Hydra's public API (hydra.core.*), or compose "
        "through giant.confdir.compose"
    )


def test_only_the_command_line_and_the_composition_import_hydra() -> None:
    """No module of giant/ outside giant/cli/ imports Hydra, but the one composition of conf/
    (giant.confdir: its loader and the `tools: all` option it registers)."""
    composition = {"giant/confdir.py:compose", "giant/confdir.py:compose_every_tool"}
    found: set[str] = set()
    for path in sorted((ROOT / "giant").rglob("*.py")):
        if path.is_relative_to(ROOT / "giant" / "cli"):
            continue
        found |= users(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix(), "hydra")
    assert found == composition, (
        f"Hydra imported in {sorted(found - composition)}: hand the job plain values (giant.context) "
        "and keep Hydra in giant/cli/"
    )


def test_every_import_of_hydra_is_seen() -> None:
    source = (
        "import hydra\n"
        "def a():\n    from hydra.core.hydra_config import HydraConfig\n"
        "def b():\n    from hydra import compose\n"
        "def c():\n    importlib.import_module('hydra.types')\n"
        "def d():\n    import hydra_plugins.x\n    from omegaconf import OmegaConf\n"
    )
    assert users(source, "m.py", "hydra") == {"m.py:<module>", "m.py:a", "m.py:b", "m.py:c"}


def test_every_kind_of_use_is_seen() -> None:
    source = (
        "import hydra._internal.utils\n"
        "def a():\n    from hydra._internal.config_loader_impl import ConfigLoaderImpl\n"
        "class K:\n    def b(self):\n        from hydra import _internal\n"
        "async def c():\n    importlib.import_module('hydra._internal.hydra')\n"
        "def d():\n    from hydra.core.hydra_config import HydraConfig\n    return '_internal'\n"
    )
    assert users(source, "m.py") == {"m.py:<module>", "m.py:a", "m.py:b", "m.py:c"}
