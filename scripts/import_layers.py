"""Print the layers of giant/ from its real import graph, as drawn in docs/ARCHITECTURE.md.

python scripts/import_layers.py

Every import counts: function bodies included (a lazy import is still a dependency), and those under
`if TYPE_CHECKING` too (an annotation's type is a dependency of the code that names it). A unit is a
first-level package (giant/agent/, ...) or a top-level module (giant/config.py, ...); a unit's layer
is one above the highest unit it imports, so every arrow points down. Exits 1 on an import circle
between units. tests/test_import_graph.py holds giant to no circle among its modules or its units,
with the functions below.
"""

from __future__ import annotations

import ast
import sys
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
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
    """The modules of giant that `module` imports, anywhere in it."""

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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
    return found


def module_graph() -> dict[str, set[str]]:
    """Each module of giant and the modules of giant it imports (a package importing a name from its
    own __init__ left out)."""
    known = modules()
    return {module: imported(module, path, known) - {module} for module, path in known.items()}


def unit_graph() -> dict[str, set[str]]:
    deps: dict[str, set[str]] = {}
    for module, targets in module_graph().items():
        mine = unit(module)
        deps.setdefault(mine, set()).update(t for t in map(unit, targets) if t not in (mine, "giant"))
    deps.pop("giant", None)  # the root package holds only __version__
    return deps


def circles(deps: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The import circles of a graph: its strongly connected components of more than one node
    (Tarjan's algorithm, without recursion), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def enter(node: str) -> tuple[str, Iterator[str]]:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        return node, iter(sorted(deps.get(node, ())))

    for root in sorted(deps):
        if root in index:
            continue
        work = [enter(root)]
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    work.append(enter(child))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:  # every child seen: close the node
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while not component or component[-1] != node:
                        component.append(stack.pop())
                        on_stack.discard(component[-1])
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def circle_path(deps: Mapping[str, Iterable[str]], component: list[str]) -> list[str]:
    """A shortest way round a circle from its first member back to it, e.g. [a, b, c, a]."""
    members, start = set(component), component[0]
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(deps.get(node, ())):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if child in members and child not in previous:
                previous[child] = node
                queue.append(child)
    raise ValueError(f"{component} is not a circle of the graph")


def describe(deps: Mapping[str, Iterable[str]], component: list[str]) -> str:
    """One line naming a circle: a way round it, then every module it holds."""
    line = " -> ".join(circle_path(deps, component))
    return line if len(component) == 2 else f"{line} (all {len(component)}: {', '.join(component)})"


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
    if found := circles(deps):
        raise SystemExit("\n".join(f"import circle: {describe(deps, c)}" for c in found))
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
