"""No import circle in giant: neither among its modules nor among its units (giant.<first component>).

The graph is the one scripts/import_layers.py draws for docs/ARCHITECTURE.md, read with ast: every
import in giant/**/*.py, lazy ones inside functions and type-only ones under `if TYPE_CHECKING:`
included; relative imports resolved; `from giant.x import y` is giant.x.y when that is a module, else
giant.x. A circle found is named (a way round it, then its members) in the failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.import_layers import circles, describe, imported, module_graph, unit_graph


def _named(deps: dict[str, set[str]]) -> str:
    return "\n".join(f"import circle: {describe(deps, c)}" for c in circles(deps))


def test_no_circle_among_giants_modules() -> None:
    deps = module_graph()
    assert not circles(deps), _named(deps)


def test_no_circle_among_giants_units() -> None:
    deps = unit_graph()
    assert not circles(deps), _named(deps)


def test_the_graph_is_giants_own() -> None:
    """Edges that must be there (and one that must not), so an empty graph cannot pass."""
    deps = module_graph()
    assert len(deps) > 100 and "giant.eval.runner" in deps
    assert {"giant.retry", "giant.llm.types"} <= deps["giant.llm.retry"]  # from-import of a name: its module
    assert "giant.atomic" in deps["giant.cli.outcomes"]  # imported inside a method
    assert "giant.agent.episode_state" in deps["giant.agent.modes.base"]  # under `if TYPE_CHECKING:` only
    units = unit_graph()
    assert "giant.llm" in units["giant.eval"] and "giant.eval" not in units["giant.llm"]
    assert "giant.agent" not in units["giant.tools"]  # a tool sees a ToolContext, not the episode
    assert "giant.tools" not in units["giant.llm"]  # the step's actions come from giant.registry


def test_the_cycle_finder_names_each_circle() -> None:
    made_up = {
        "a": {"b"},
        "b": {"c", "x"},
        "c": {"a"},  # a -> b -> c -> a
        "d": {"a", "e"},
        "e": {"d"},  # d <-> e, beside the first circle and pointing into it
        "x": {"y"},
        "y": set(),  # a path out of a circle is no circle
        "z": {"missing"},  # a target that is no node of its own
    }
    assert circles(made_up) == [["a", "b", "c"], ["d", "e"]]
    assert _named(made_up) == "import circle: a -> b -> c -> a (all 3: a, b, c)\nimport circle: d -> e -> d"
    made_up["c"] = set()
    assert circles(made_up) == [["d", "e"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert circles({"a": {"a"}}) == []  # a package importing a name of its own __init__


def test_the_cycle_finder_sees_a_long_circle() -> None:
    """Deeper than Python's recursion limit: the finder keeps its own stack."""
    ring = {f"m{i}": {f"m{(i + 1) % 3000}"} for i in range(3000)}
    (found,) = circles(ring)
    assert len(found) == 3000


def test_every_kind_of_import_is_read(tmp_path: Path) -> None:
    """Relative, lazy, plain and type-only imports (either branch of `if TYPE_CHECKING:`) all count."""
    package = tmp_path / "giant" / "pkg"
    package.mkdir(parents=True)
    source = package / "mod.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "import giant.plain\n"
        "from . import sibling\n"
        "from .sibling import name_in_sibling\n"
        "from .. import top\n"
        "from giant.pkg import name_in_init\n"
        "if TYPE_CHECKING:\n"
        "    from giant.hinted import Hint\n"
        "else:\n"
        "    from giant.otherwise import Runtime\n"
        "def f():\n"
        "    from giant.lazy import thing\n",
        encoding="utf-8",
    )
    names = ["giant", "giant.pkg", "giant.pkg.mod", "giant.pkg.sibling", "giant.top", "giant.plain"]
    names += ["giant.hinted", "giant.otherwise", "giant.lazy"]
    known = {name: source for name in names}
    found = imported("giant.pkg.mod", source, known)
    assert found == {
        "giant.plain",
        "giant.pkg.sibling",
        "giant.top",
        "giant.pkg",  # a name from the package's __init__: the package itself
        "giant.hinted",
        "giant.otherwise",
        "giant.lazy",
    }


def test_the_architecture_page_draws_the_layers_as_they_are(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/ARCHITECTURE.md shows scripts/import_layers.py's drawing; a moved module must redraw it."""
    from scripts.import_layers import main

    assert main() == 0
    drawn = capsys.readouterr().out
    page = (Path(__file__).resolve().parents[1] / "docs" / "ARCHITECTURE.md").read_text()
    assert drawn in page, (
        "run `python scripts/import_layers.py` and paste its layers into docs/ARCHITECTURE.md"
    )
