"""Our rows beside the paper's: each row that reproduces a published configuration with the published
row and the difference, then the published Table 1 and the published tool ablations (Table 3), all read
from giant.tracking.published."""

from __future__ import annotations

from giant.tracking.published import (
    CAVEAT,
    PUBLISHED_MODEL,
    TABLE1,
    TASKS,
    ToolAblation,
    published_row_for,
    tool_ablations,
)
from giant.tracking.published import Cell as PublishedCell
from giant.tracking.tables.formats import markdown_lines
from giant.tracking.tables.rows import MISSING, Cell, Table, title


def comparison_markdown(table: Table) -> str:
    """Each of our rows that matches a published configuration, with the published row and the
    difference in percentage points; then the whole published tables for reference."""
    tasks = [t for t in table.tasks if t in TASKS]
    header = ["method", "model", *(title(t) for t in tasks)]
    lines = markdown_lines(header, [])
    for row in table.rows:
        rec = row.record
        published = published_row_for(rec.agent_mode, rec.runs_per_item, rec.settings, rec.tools)
        if published is None:
            continue
        ours = [row.cells[t].text() if t in row.cells else MISSING for t in tasks]
        paper = [c.text() if (c := published.cells.get(t)) else MISSING for t in tasks]
        diff = [
            f"{row.cells[t].mean - published.cells[t].mean:+.1f}"
            if t in row.cells and t in published.cells
            else MISSING
            for t in tasks
        ]
        inside = [_inside(row.cells.get(t), published.cells.get(t)) for t in tasks]
        lines.append("| " + " | ".join([row.method, row.model, *ours]) + " |")
        lines.append("| " + " | ".join([f"paper: {published.method}", PUBLISHED_MODEL, *paper]) + " |")
        lines.append("| " + " | ".join(["difference (points)", "", *diff]) + " |")
        lines.append("| " + " | ".join(["published inside our 95% interval?", "", *inside]) + " |")
    if len(lines) == 2:
        lines.append("| (no run of ours uses a published configuration) |" + " |" * (len(header) - 1))
    out = ["## Ours vs published", "", *lines, "", "## Published Table 1", "", published_markdown(), ""]
    for ablation in tool_ablations().values():
        out += [f"## {ablation.title}", "", ablation_markdown(ablation), ""]
    out.append(f"\\* confirmed by the abstract. {CAVEAT}")
    return "\n".join(out) + "\n"


def _inside(ours: Cell | None, published: PublishedCell | None) -> str:
    """ "yes [low, high]" when the published mean lies inside our bootstrap 95% interval, "no
    [low, high]" when it does not, "-" when either side is missing or our run logged no interval."""
    if ours is None or published is None or (holds := ours.holds(published.mean)) is None:
        return MISSING
    return f"{'yes' if holds else 'no'} [{ours.ci_low:.1f}, {ours.ci_high:.1f}]"


def ablation_markdown(ablation: ToolAblation) -> str:
    """A published tool ablation: the method without and with the tool, one point value per task."""
    without, with_tool = ablation.columns
    rows = [
        [without, *(f"{ablation.without[t]:.1f}" for t in TASKS)],
        [with_tool, *(f"{ablation.with_tool[t]:.1f}" for t in TASKS)],
    ]
    return "\n".join(markdown_lines(["method", *(title(t) for t in TASKS)], rows))


def published_markdown() -> str:
    rows = [
        [prow.method, *(c.text() if (c := prow.cells.get(t)) else MISSING for t in TASKS)] for prow in TABLE1
    ]
    return "\n".join(markdown_lines(["method", *(title(t) for t in TASKS)], rows))
