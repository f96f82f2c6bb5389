"""Print the layers of giant/ from its real import graph, as drawn in docs/ARCHITECTURE.md.

python scripts/import_layers.py

Every import counts (function bodies included: a lazy import is still a dependency) except those under
`if TYPE_CHECKING`. A unit is a first-level package (giant/agent/, ...) or a top-level module
(giant/config.py, ...); a unit's layer is one above the highest unit it imports, so every arrow points
down. Exits 1 on an import circle between units.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "giant"


def modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = ["giant", *path.relative_to(ROOT).with_suffix("").parts]
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def unit(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "giant"
    return f"giant.{parts[1]}" if (ROOT / parts[1]).is_dir() else module


def imported(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of giant that `module` imports outside `if TYPE_CHECKING`."""

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return
        if isinstance(node, ast.Import):
            found.update(t for a in node.names if (t := resolve(a.name)))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if (target := full if full in known else resolve(base)) is not None:
                    found.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def unit_graph() -> dict[str, set[str]]:
    known = modules()
    deps: dict[str, set[str]] = {}
    for module, path in known.items():
        mine = unit(module)
        targets = {unit(t) for t in imported(module, path, known)}
        deps.setdefault(mine, set()).update(t for t in targets if t not in (mine, "giant"))
    deps.pop("giant", None)  # the root package holds only __version__
    return deps


def layers(deps: dict[str, set[str]]) -> dict[str, int]:
    level: dict[str, int] = {}

    def place(u: str, path: tuple[str, ...]) -> int:
        if u in path:
            raise SystemExit(f"import circle: {' -> '.join((*path, u))}")
        if u not in level:
            level[u] = 1 + max((place(d, (*path, u)) for d in deps[u]), default=-1)
        return level[u]

    for u in deps:
        place(u, ())
    return level


def main() -> int:
    deps = unit_graph()
    level = layers(deps)

    def name(u: str) -> str:
        short = u.removeprefix("giant.")
        return f"{short}/" if (ROOT / short).is_dir() else short

    for n in range(max(level.values()), -1, -1):
        print(f"layer {n}")
        for u in sorted(u for u in level if level[u] == n):
            below = sorted(deps[u], key=lambda d: (-level[d], d))
            print(f"  {name(u):13s} -> {', '.join(map(name, below)) or '(nothing of giant)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
