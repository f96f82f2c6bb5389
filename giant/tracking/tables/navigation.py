"""Where the methods looked, side by side: per task, each row's navigation metrics (the runs' `nav_*`
MLflow metrics, docs/navigation.md) in one table, and their hit rates with intervals in one figure.
The random-regions ablation is the chance level of navigation; rows of one task share its items."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: figures are built on servers and in CI
import matplotlib.pyplot as plt

from giant.tracking.tables.formats import markdown_lines
from giant.tracking.tables.rows import MISSING, RunRecord, Table, title

COLUMNS = (  # heading, navigation metric (without its prefix), shown as a share
    ("hit rate", "hit_rate", True),
    ("annotated", "annotated", False),
    ("finest µm/px", "finest_mpp", False),
    ("median µm/px", "median_mpp", False),
    ("coverage", "coverage", True),
    ("revisits", "revisits", True),
    ("tissue", "tissue", True),
    ("first ≤1 µm/px step", "first_fine_step", False),
    ("acc. hit", "accuracy_hit", True),
    ("acc. no hit", "accuracy_no_hit", True),
)


def _cell_record(table: Table, records: list[RunRecord]) -> dict[tuple[str, str], tuple[str, RunRecord]]:
    """(task, row label) -> (row label, the cell's run), for the rows whose run logged navigation."""
    by_id = {rec.run_id: rec for rec in records}
    out = {}
    for row in table.rows:
        label = f"{row.method} · {row.model}"
        for task, cell in row.cells.items():
            rec = by_id.get(cell.run_id or "")
            if rec is not None and rec.navigation:
                out[(task, label)] = (label, rec)
    return out


def _value(rec: RunRecord, name: str, share: bool) -> str:
    value = rec.navigation.get(name)
    if value is None:
        return MISSING
    if name == "hit_rate":
        low, high = rec.navigation.get("hit_rate_ci_low"), rec.navigation.get("hit_rate_ci_high")
        interval = f" [{100 * low:.0f}%, {100 * high:.0f}%]" if low is not None and high is not None else ""
        return f"{100 * value:.1f}%{interval}"
    return f"{100 * value:.1f}%" if share else f"{value:.3g}"


def navigation_markdown(table: Table, records: list[RunRecord]) -> str | None:
    """The navigation table (shares with their % sign, the hit rate with its 95% interval, µm/px in the
    headings); None: no run has one."""
    cells = _cell_record(table, records)
    if not cells:
        return None
    lines = ["# Where the methods looked (docs/navigation.md)", ""]
    for task in table.tasks:
        rows = [(label, rec) for (t, _), (label, rec) in cells.items() if t == task]
        if not rows:
            continue
        header = ["method", *(heading for heading, _, _ in COLUMNS)]
        body = [[label, *(_value(rec, name, share) for _, name, share in COLUMNS)] for label, rec in rows]
        lines += [f"## {title(task)}", "", *markdown_lines(header, body), ""]
    return "\n".join(lines)


def navigation_figure(table: Table, records: list[RunRecord], path: Path) -> Path | None:
    """Hit rate (95% interval) per method, one panel per task with annotated runs; None: none has."""
    cells = _cell_record(table, records)
    tasks = [
        t
        for t in table.tasks
        if any(t == task and "hit_rate" in rec.navigation for (task, _), (_, rec) in cells.items())
    ]
    if not tasks:
        return None
    fig, axes = plt.subplots(1, len(tasks), figsize=(4 + 3 * len(tasks), 4), squeeze=False)
    for ax, task in zip(axes[0], tasks, strict=True):
        rows = [
            (label, rec)
            for (t, _), (label, rec) in cells.items()
            if t == task and "hit_rate" in rec.navigation
        ]
        rates = [100 * rec.navigation["hit_rate"] for _, rec in rows]
        low = [
            r - 100 * rec.navigation.get("hit_rate_ci_low", rec.navigation["hit_rate"])
            for r, (_, rec) in zip(rates, rows, strict=True)
        ]
        high = [
            100 * rec.navigation.get("hit_rate_ci_high", rec.navigation["hit_rate"]) - r
            for r, (_, rec) in zip(rates, rows, strict=True)
        ]
        ax.bar(range(len(rows)), rates, yerr=[low, high], capsize=4, color="#4363d8")
        ax.set_xticks(range(len(rows)), [label for label, _ in rows], rotation=30, ha="right", fontsize=7)
        ax.set_ylim(0, 105)
        ax.set_ylabel("evidence hit rate (%), 95% interval")
        ax.set_title(title(task))
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
