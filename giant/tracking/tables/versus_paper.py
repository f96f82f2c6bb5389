"""Our rows beside the published ones: each row that reproduces a published configuration with every
published version of that row and the difference; the patch-design study's rows beside our
input-design cells and GIANT runs; then the published tables. Every published number names its
source (paper, version, arXiv id), all read from giant.tracking.published."""

from __future__ import annotations

from giant.agent.modes import find_mode
from giant.tracking.published import (
    PUBLISHED_MODEL,
    TASKS,
    PublishedRow,
    ToolAblation,
    published_rows,
    published_rows_for,
    rows_of,
    sources,
    tool_ablations,
)
from giant.tracking.published import Cell as PublishedCell
from giant.tracking.tables.formats import markdown_lines
from giant.tracking.tables.rows import MISSING, Cell, Row, Table, title

STUDY = "patch_design"  # the patch-design study's source key in published.yaml


def comparison_markdown(table: Table) -> str:
    """Each of our rows that matches a published configuration, with each published version of it
    and the difference in percentage points; then the study's rows beside ours; then the published
    tables for reference."""
    tasks = [t for t in table.tasks if t in TASKS]
    header = ["method", "model", *(title(t) for t in tasks)]
    lines = markdown_lines(header, [])
    for row in table.rows:
        rec = row.record
        for published in published_rows_for(rec.agent_mode, rec.runs_per_item, rec.settings, rec.tools):
            lines += _versus(row, published, tasks)
    if len(lines) == 2:
        lines.append("| (no run of ours uses a published configuration) |" + " |" * (len(header) - 1))
    out = ["## Ours vs published", "", *lines, ""]
    out += ["## Published Table 1 and later published rows", "", published_markdown(), ""]
    out += study_markdown(table)
    for ablation in tool_ablations().values():
        out += [f"## {ablation.title}", "", ablation_markdown(ablation), ""]
    out += [f"\\* confirmed by the abstract. {_caveat()}"]
    return "\n".join(out) + "\n"


def _versus(row: Row, published: PublishedRow, tasks: list[str]) -> list[str]:
    ours = [row.cells[t].text() if t in row.cells else MISSING for t in tasks]
    paper = [c.text() if (c := published.cells.get(t)) else MISSING for t in tasks]
    diff = [
        f"{row.cells[t].mean - published.cells[t].mean:+.1f}"
        if t in row.cells and t in published.cells
        else MISSING
        for t in tasks
    ]
    inside = [_inside(row.cells.get(t), published.cells.get(t)) for t in tasks]
    model = published.source.model if published.source else PUBLISHED_MODEL
    cite = published.source.cite if published.source else MISSING
    return [
        "| " + " | ".join([row.method, row.model, *ours]) + " |",
        "| " + " | ".join([f"paper: {published.method}", model, *paper]) + " |",
        "| " + " | ".join(["difference (points)", "", *diff]) + " |",
        "| " + " | ".join(["published inside our 95% interval?", "", *inside]) + " |",
        "| " + " | ".join(["published in", cite, *([""] * len(tasks))]) + " |",
    ]


def study_markdown(table: Table) -> list[str]:
    """The patch-design study's rows (arXiv 2606.12407) beside our input-design cells and our GIANT
    runs, each of ours with its 95% interval. Its factor levels were not published, so no cell of ours
    claims to be one of its rows; scripts/compare.py tests ours against each other on the same items."""
    study = rows_of(STUDY)
    tasks = [t for t in TASKS if any(t in row.cells for row in study)]
    source = sources()[STUDY]
    rows = [
        [_full_label(row), row.model, *(_with_interval(row.cells.get(t)) for t in tasks)]
        for row in table.rows
        if _beside_the_study(row) and any(t in row.cells for t in tasks)
    ]
    rows += [
        [
            f"paper: {row.method}",
            source.model,
            *(c.text() if (c := row.cells.get(t)) else MISSING for t in tasks),
        ]
        for row in study
    ]
    header = ["method", "model", *(title(t) for t in tasks)]
    return [
        f"## {source.title} (arXiv {source.arxiv}) beside ours",
        "",
        *markdown_lines(header, rows),
        "",
        f"Published: {source.cite}; {source.note}. Paired tests on the same items: "
        "scripts/compare.py (docs/input-design.md).",
        "",
    ]


def _beside_the_study(row: Row) -> bool:
    """Our cells of the study (giant.agent.modes: `Mode.study_cell`) and our rows of a published
    configuration (GIANT x1 and x5 at T=20, S=1000, the baselines)."""
    rec = row.record
    mode = find_mode(rec.agent_mode)
    return (mode is not None and mode.study_cell(rec.settings)) or bool(
        published_rows_for(rec.agent_mode, rec.runs_per_item, rec.settings, rec.tools)
    )


def _full_label(row: Row) -> str:
    """The row's method with every row setting shown (Table 1 shows only those that vary), so each
    study cell says its inference, count, size and µm/px."""
    rec = row.record
    mode = find_mode(rec.agent_mode)
    if mode is None or not rec.row_settings:
        return row.method
    details = ", ".join(mode.row_detail(name, value) for name, value in rec.row_settings)
    return f"{row.method.split(' (')[0]} ({details})"


def _with_interval(cell: Cell | None) -> str:
    if cell is None:
        return MISSING
    if cell.ci_low is None or cell.ci_high is None:
        return cell.text()
    return f"{cell.text()} [{cell.ci_low:.1f}, {cell.ci_high:.1f}]"


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
    source = sources()[ablation.source]
    cite = f"{source.title}, arXiv {source.arxiv}, {ablation.table}"
    return "\n".join(
        [*markdown_lines(["method", *(title(t) for t in TASKS)], rows), "", f"Published in {cite}."]
    )


def published_markdown() -> str:
    """Every published row (GIANT v1's Table 1, the patch-design study's, any later version's), each
    with its source."""
    rows = [
        [
            prow.method,
            *(c.text() if (c := prow.cells.get(t)) else MISSING for t in TASKS),
            prow.source.cite if prow.source else MISSING,
        ]
        for prow in published_rows()
    ]
    return "\n".join(markdown_lines(["method", *(title(t) for t in TASKS), "source"], rows))


def _caveat() -> str:
    """Each source's note, named."""
    return " ".join(
        f"{source.title} ({source.arxiv}): {source.note}." for source in sources().values() if source.note
    )
