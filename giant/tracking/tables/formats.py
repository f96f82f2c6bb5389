"""A table as text: markdown, LaTeX (booktabs) and CSV, and the cost table (cost per item, failed
items, and calls and dollars per billing tier)."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable

from giant.tracking.safe_cells import csv_row, markdown_text
from giant.tracking.tables.rows import INCOMPLETE_MARK, INCOMPLETE_NOTE, MISSING, TIERS, Cell, Table, title


def markdown_lines(header: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table: the header, its rule, one line per row (HTML in a cell escaped)."""
    lines = ["| " + " | ".join(map(markdown_text, header)) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(map(markdown_text, cells)) + " |" for cells in rows]


def grid(table: Table, cell: Callable[[Cell], str]) -> list[list[str]]:
    """method, model and one text per task for each row (MISSING where the row has no run)."""
    return [
        [row.method, row.model, *(cell(row.cells[t]) if t in row.cells else MISSING for t in table.tasks)]
        for row in table.rows
    ]


def to_markdown(table: Table) -> str:
    lines = markdown_lines(["method", "model", *(title(t) for t in table.tasks)], grid(table, Cell.text))
    if table.has_incomplete:
        lines += ["", INCOMPLETE_NOTE]
    return "\n".join(lines) + "\n"


def _money(value: float | None) -> str:
    return "cost unknown" if value is None else f"${value:.4f}"


def tier_markdown(table: Table) -> str:
    """One line per cell with a logged tier split: paid calls and dollars per billing tier
    (standard, flex, batch); empty when no cell has one (runs logged before the tiers)."""
    rows = [
        [
            row.method,
            row.model,
            title(task),
            *(str(tiers.calls(tier)) for tier in TIERS),
            *(_money(tiers.cost(tier)) for tier in TIERS),
        ]
        for row in table.rows
        for task in table.tasks
        if (cell := row.cells.get(task)) is not None and (tiers := cell.tiers) is not None
    ]
    if not rows:
        return ""
    header = ["method", "model", "task", *(f"calls {t}" for t in TIERS), *(f"cost {t}" for t in TIERS)]
    return "\n".join(markdown_lines(header, rows)) + "\n"


def cost_markdown(table: Table) -> str:
    """The same rows and columns as Table 1, each cell its cost per item and its failed items (no
    scored answer; counted incorrect in the metric), so a cheap or a fragile cell shows; then the
    paid calls and dollars of each cell per billing tier, where logged."""
    header = ["method", "model", *(title(t) for t in table.tasks)]
    text = "\n".join(markdown_lines(header, grid(table, Cell.cost_text))) + "\n"
    tiers = tier_markdown(table)
    return text + (f"\nPaid calls and cost per billing tier:\n\n{tiers}" if tiers else "")


TIER_COLUMNS = [*(f"calls_{t}" for t in TIERS), *(f"cost_{t}_usd" for t in TIERS)]
CELL_COLUMNS = [
    *("method", "model", "task", "mean", "std", "ci_low", "ci_high"),
    *("n_items", "failed", "cost_per_item_usd", *TIER_COLUMNS, "complete", "run_id"),
]


def _blank(value: float | None) -> str:
    return "" if value is None else str(round(value, 6))


def cells_csv(table: Table) -> str:
    """Every cell on its own line with all it knows (percent, USD per item, calls and USD per
    billing tier), for spreadsheets."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CELL_COLUMNS)
    for row in table.rows:
        for task in table.tasks:
            if (cell := row.cells.get(task)) is None:
                continue
            values = (cell.ci_low, cell.ci_high, cell.n_items, cell.failed, cell.cost_per_item)
            tiers = cell.tiers
            calls = [_blank(None if tiers is None else tiers.calls(t)) for t in TIERS]
            costs = [_blank(None if tiers is None else tiers.cost(t)) for t in TIERS]
            head = [row.method, row.model, task, round(cell.mean, 4), round(cell.std, 4)]
            tail = [cell.complete, cell.run_id]
            writer.writerow(csv_row([*head, *map(_blank, values), *calls, *costs, *tail]))
    return buf.getvalue()


_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\^{}",
}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)


def to_latex(table: Table) -> str:
    """A booktabs tabular (needs \\usepackage{booktabs}), percent with one decimal as in the paper."""
    header = ["Method", "Model", *(latex_escape(title(t)) for t in table.tasks)]
    body = [[latex_escape(c) for c in cells[:2]] + cells[2:] for cells in grid(table, Cell.latex)]
    lines = [
        "% Rebuilt by scripts/make_tables.py; needs \\usepackage{booktabs}",
        "\\begin{tabular}{ll" + "c" * len(table.tasks) + "}",
        "\\toprule",
        " & ".join(header) + " \\\\",
        "\\midrule",
        *(" & ".join(cells) + " \\\\" for cells in body),
        "\\bottomrule",
        "\\end{tabular}",
        *(
            ["% $^\\dagger$ " + INCOMPLETE_NOTE.removeprefix(INCOMPLETE_MARK + " ")]
            if table.has_incomplete
            else []
        ),
    ]
    return "\n".join(lines) + "\n"


def to_csv(table: Table) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(csv_row(["method", "model", *table.tasks]))
    writer.writerows(map(csv_row, grid(table, Cell.text)))
    return buf.getvalue()
