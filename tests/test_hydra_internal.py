"""Hydra's private modules (`hydra._internal`) are reached from one function of giant/ and scripts/
only, `giant.confdir.compose` (composing conf/ outside a running app needs Hydra's loader): every other
use goes through Hydra's public API, so a Hydra upgrade has one place to look. Read with ast: plain,
from- and lazy imports, and `importlib.import_module("hydra._internal...")` calls."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRIVATE = "hydra._internal"


def _private(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(alias.name.startswith(PRIVATE) for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        return module.startswith(PRIVATE) or (
            module == "hydra" and any(a.name == "_internal" for a in node.names)
        )
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        return str(node.args[0].value).startswith(PRIVATE) and "import" in ast.unparse(node.func)
    return False


def users(source: str, name: str) -> set[str]:
    """`name:function` (`name:<module>` at the top level) for each function reaching hydra._internal."""
    found: set[str] = set()

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, f"{name}:{child.name}")
                continue
            if _private(child):
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


def test_every_kind_of_use_is_seen() -> None:
    source = (
        "import hydra._internal.utils\n"
        "def a():\n    from hydra._internal.config_loader_impl import ConfigLoaderImpl\n"
        "class K:\n    def b(self):\n        from hydra import _internal\n"
        "async def c():\n    importlib.import_module('hydra._internal.hydra')\n"
        "def d():\n    from hydra.core.hydra_config import HydraConfig\n    return '_internal'\n"
    )
    assert users(source, "m.py") == {"m.py:<module>", "m.py:a", "m.py:b", "m.py:c"}
