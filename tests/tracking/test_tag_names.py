"""MLflow tag names are spelled once, in giant.tracking.names: a literal anywhere else in giant/ or
scripts/ is a writer or reader that a renamed tag would silently leave behind."""

from __future__ import annotations

import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAMES = ROOT / "giant" / "tracking" / "names.py"
# "giant.role", "mlflow.parentRunId", or a filter naming one ("tags.`giant.role` = 'job'")
TAG = re.compile(r"""^[rbuf]*["'](giant|mlflow)\.[A-Za-z_]+["']$|tags\.`?(giant|mlflow)\.""")


def _is_module(literal: str) -> bool:
    """ "giant.roles" names a module (a logger, a docstring's pointer), not a tag."""
    name = literal.strip("\"'").split(".", 1)[1]
    return (ROOT / "giant" / f"{name}.py").is_file() or (ROOT / "giant" / name).is_dir()


def tag_literals(path: Path) -> list[str]:
    with tokenize.open(path) as source:
        tokens = list(tokenize.generate_tokens(source.readline))
    return [
        f"{path}:{token.start[0]}: {token.string}"
        for token in tokens
        if token.type == tokenize.STRING and TAG.search(token.string) and not _is_module(token.string)
    ]


def test_no_tag_literal_outside_the_names_module() -> None:
    files = [*sorted((ROOT / "giant").rglob("*.py")), *sorted((ROOT / "scripts").rglob("*.py"))]
    found = [hit for path in files if path != NAMES for hit in tag_literals(path)]
    assert found == [], "import the tag from giant.tracking.names:\n" + "\n".join(found)


def test_the_check_finds_a_literal(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text('ROLE = "giant.role"\nFILTER = f"tags.`giant.role` = \'{1}\'"\nLOG = "giant.eval"\n')
    assert [hit.split(": ", 1)[1] for hit in tag_literals(planted)] == [
        '"giant.role"',
        "f\"tags.`giant.role` = '{1}'\"",
    ]
