"""Text from a model, a question file or a run name, made safe for the files people open: a CSV cell
a spreadsheet would run as a formula (`=HYPERLINK(...)`, `+`, `-`, `@`, a leading TAB or CR) gets a
leading `'` (the OWASP rule for CSV injection), so Excel, LibreOffice and Sheets show it as text; a
number stays a number. A Markdown cell has its HTML escaped, so a viewer that renders inline HTML
(GitHub, MkDocs, VS Code) shows `<img onerror=...>` as text instead of running it."""

from __future__ import annotations

from collections.abc import Iterable

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def csv_cell(value: object) -> object:
    """`value`, or for text a spreadsheet would read as a formula, the text after a `'`. A carriage
    return inside text becomes a newline: Python's csv writer quotes a cell with `\\n` but not one with
    a lone `\\r`, which a reader then takes for the end of the row."""
    if not isinstance(value, str):
        return value
    text = value.replace("\r\n", "\n").replace("\r", "\n")
    return "'" + text if value.startswith(FORMULA_STARTS) and not _is_number(value) else text


def csv_row(values: Iterable[object]) -> list[object]:
    return [csv_cell(value) for value in values]


def markdown_text(text: str) -> str:
    """`text` for a Markdown table cell: `&` and `<` escaped, so no tag or entity is read from it (a
    lone `>` starts nothing and stays readable: "right -> wrong"), and `|` kept inside the cell."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace("|", "\\|")
