"""The paper's tables and figures, rebuilt from logged MLflow runs.

Runs are read back by the tag and metric names fixed in docs/ARCHITECTURE.md, so a table can be
rebuilt at any time from the store alone (no output folders needed), and a "report" run keeps the
rendered files beside the runs they summarise.
"""

from __future__ import annotations

import csv
import io
import logging
import re
from collections.abc import Callable, Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: tables are built on servers and in CI
import matplotlib.pyplot as plt
import mlflow
from mlflow.entities import Run
from pydantic import BaseModel, ConfigDict

from giant.agent.modes import find_mode
from giant.errors import ConfigError
from giant.tracking.names import (
    DATASET_TAG,
    PARENT_TAG,
    REPORT_ROLE,
    RESCORE_TAG,
    ROLE_TAG,
    SOURCE_START_TAG,
    STATUS_TAG,
    SWEEP_ID_TAG,
    SWEEP_ROLE,
    tag_filter,
)
from giant.tracking.published import (
    CAVEAT,
    CONCH_ABLATION,
    PUBLISHED_MODEL,
    TABLE1,
    TASK_TITLES,
    TASKS,
    published_row_for,
)
from giant.tracking.published import Cell as PublishedCell

log = logging.getLogger(__name__)

SKIP_ROLES = frozenset({SWEEP_ROLE, REPORT_ROLE})  # parent and report runs carry no task metric
MISSING = "-"
UNKNOWN_RANK = 1000  # rows of a mode no longer registered go last


class RunRecord(BaseModel):
    """One finished job as the tables see it (metric values are fractions in [0, 1])."""

    model_config = ConfigDict(frozen=True)
    run_id: str
    task: str
    agent_mode: str
    model: str
    runs_per_item: int = 1
    # The run's integer agent settings by name (MLflow params `agent.<name>`; max_steps and
    # crop_size also from the T and S tags): what row keys, labels and the published lookup read.
    settings: dict[str, int] = {}
    tools: tuple[str, ...] = ()  # MLflow param agent.tools (e.g. conch): a tool makes another method
    mean: float
    std: float
    ci_low: float | None = None  # the bootstrap's 95% percentile interval (older runs: unknown)
    ci_high: float | None = None
    n_items: int | None = None
    failed: int | None = None  # items without a scored answer (n_items - n_scored)
    cost_per_item: float | None = None  # USD; None: unknown (a model without a price, or not logged)
    complete: bool = True  # False: a budget stop, interruption or missing slides left items unmeasured
    start_time: int = 0  # a re-score: its source's start time
    rescored_at: int = 0  # a re-score: its own start time (0: not a re-score)

    @property
    def order(self) -> tuple[int, int]:
        """Which of two runs of a cell is newer (see RESCORE_TAG)."""
        return (self.start_time, self.rescored_at)

    @property
    def T(self) -> int | None:
        return self.settings.get("max_steps")

    @property
    def S(self) -> int | None:
        return self.settings.get("crop_size")

    @property
    def row_settings(self) -> tuple[tuple[str, int | None], ...]:
        """The settings that make this run's mode a different method (the mode's `row_settings`;
        none for a mode no longer registered)."""
        mode = find_mode(self.agent_mode)
        return tuple((name, self.settings.get(name)) for name in (mode.row_settings if mode else ()))

    @property
    def row_key(self) -> RowKey:
        """What makes two runs the same table row: only the settings that change the method."""
        return (self.agent_mode, self.runs_per_item, self.row_settings, self.model, self.tools)


RowKey = tuple[str, int, tuple[tuple[str, int | None], ...], str, tuple[str, ...]]


INCOMPLETE_MARK = "†"
INCOMPLETE_NOTE = (
    f"{INCOMPLETE_MARK} incomplete run (budget stop, interruption or missing slides): not every item was "
    "measured; the run's incomplete_reason tag says why."
)


class Cell(BaseModel):
    mean: float  # percent
    std: float  # percent
    complete: bool = True
    ci_low: float | None = None  # percent
    ci_high: float | None = None
    n_items: int | None = None
    failed: int | None = None
    cost_per_item: float | None = None  # USD
    run_id: str = ""

    def text(self) -> str:
        return f"{self.mean:.1f} ± {self.std:.1f}" + ("" if self.complete else INCOMPLETE_MARK)

    def cost_text(self) -> str:
        """What the cell cost and how many of its items failed: "$0.0123/item, 2/100 failed"."""
        cost = "cost unknown" if self.cost_per_item is None else f"${self.cost_per_item:.4f}/item"
        failed = MISSING if self.failed is None else f"{self.failed}/{self.n_items} failed"
        return f"{cost}, {failed}"

    def holds(self, value: float) -> bool | None:
        """Whether `value` (percent) lies inside the cell's 95% interval; None when not logged."""
        if self.ci_low is None or self.ci_high is None:
            return None
        return self.ci_low <= value <= self.ci_high

    def latex(self) -> str:
        mark = "" if self.complete else "^{\\dagger}"
        return f"${self.mean:.1f} \\pm {self.std:.1f}{mark}$"


class Row(BaseModel):
    method: str
    model: str
    record: RunRecord  # any run of the row: carries the row's settings
    cells: dict[str, Cell]  # task -> cell


class Table(BaseModel):
    tasks: list[str]
    rows: list[Row]
    superseded: int = 0  # older runs of the same row and task, replaced by the newest

    @property
    def has_incomplete(self) -> bool:
        return any(not cell.complete for row in self.rows for cell in row.cells.values())


# ----------------------------------------------------------------------------- reading runs


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "", "None") else None
    except ValueError:
        return None


def _count(value: float | None) -> int | None:
    return None if value is None else round(value)


def _record(run: Run) -> RunRecord | None:
    tags, metrics = run.data.tags, run.data.metrics
    if tags.get(ROLE_TAG) in SKIP_ROLES or DATASET_TAG not in tags:
        return None
    if "metric_boot_mean" not in metrics or "metric_boot_std" not in metrics:
        return None
    settings = {
        name.removeprefix("agent."): number
        for name, value in run.data.params.items()
        if name.startswith("agent.") and (number := _int_or_none(value)) is not None
    }
    for tag, name in (("T", "max_steps"), ("S", "crop_size")):
        if (number := _int_or_none(tags.get(tag))) is not None:
            settings[name] = number
    return RunRecord(
        run_id=run.info.run_id,
        task=tags["dataset"],
        agent_mode=tags.get("agent_mode", "?"),
        model=tags.get("model", "?"),
        runs_per_item=_int_or_none(tags.get("runs_per_item")) or 1,
        settings=settings,
        tools=tuple(re.findall(r"\w+", run.data.params.get("agent.tools", ""))),
        mean=metrics["metric_boot_mean"],
        std=metrics["metric_boot_std"],
        ci_low=metrics.get("metric_ci_low"),
        ci_high=metrics.get("metric_ci_high"),
        n_items=_count(metrics.get("n_items")),
        failed=_count(metrics["n_items"] - metrics["n_scored"])
        if "n_items" in metrics and "n_scored" in metrics
        else None,
        cost_per_item=metrics.get("cost_per_item_usd"),
        complete=tags.get(STATUS_TAG) != "incomplete",
        start_time=_int_or_none(tags.get(SOURCE_START_TAG)) or run.info.start_time or 0,
        rescored_at=(run.info.start_time or 0) if RESCORE_TAG in tags else 0,
    )


def load_runs(
    *, experiment: str = "giant", sweep_id: str | None = None, filter_string: str | None = None
) -> list[RunRecord]:
    """Job runs of an experiment (optionally one sweep, or an MLflow filter) from the current
    tracking URI. Raises ConfigError with one line when there is nothing to tabulate."""
    where = " and ".join(
        part for part in (tag_filter(SWEEP_ID_TAG, sweep_id) if sweep_id else "", filter_string or "") if part
    )
    if mlflow.MlflowClient().get_experiment_by_name(experiment) is None:
        raise ConfigError(
            f"no MLflow experiment '{experiment}' at {mlflow.get_tracking_uri()}: "
            "run `make demo` or scripts/run_eval.py first (or pass --experiment/--tracking-uri)"
        )
    runs = mlflow.search_runs(experiment_names=[experiment], filter_string=where, output_format="list")
    assert isinstance(runs, list)
    records = [r for r in (_record(run) for run in runs) if r is not None]
    if not records:
        scope = f" matching '{where}'" if where else ""
        raise ConfigError(
            f"no finished job runs{scope} in experiment '{experiment}' at {mlflow.get_tracking_uri()}: "
            "run `make demo` or scripts/run_eval.py first"
        )
    return records


# ----------------------------------------------------------------------------- the table


def _mode_rank(name: str) -> int:
    mode = find_mode(name)
    return mode.table_rank if mode is not None else UNKNOWN_RANK


def _sort_key(key: RowKey) -> tuple[object, ...]:
    mode, k, settings, model, tools = key
    return (_mode_rank(mode), mode, k, tuple(value or 0 for _, value in settings), model, tools)


def latest_per_row_and_task(records: Iterable[RunRecord]) -> tuple[list[RunRecord], int]:
    """The newest run of each (row, task); re-running a configuration replaces its cell."""
    newest: dict[tuple[object, ...], RunRecord] = {}
    total = 0
    for rec in records:
        total += 1
        key = (*rec.row_key, rec.task)
        if key not in newest or rec.order > newest[key].order:
            newest[key] = rec
    return list(newest.values()), total - len(newest)


def _method_label(rec: RunRecord, varying: set[str]) -> str:
    """agent_mode, "xk" for k-run votes, and the mode's row settings only where they vary within it
    (as the mode shows them: T=20, 1024 px)."""
    label = rec.agent_mode + (f" x{rec.runs_per_item}" if rec.runs_per_item > 1 else "")
    label += "".join(f" + {tool.upper()}" for tool in rec.tools)
    mode = find_mode(rec.agent_mode)
    details = [mode.row_detail(name, value) for name, value in rec.row_settings if mode and name in varying]
    return f"{label} ({', '.join(details)})" if details else label


def _varying_by_mode(records: list[RunRecord]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for mode in {r.agent_mode for r in records}:
        values: dict[str, set[int | None]] = {}
        for rec in records:
            if rec.agent_mode == mode:
                for name, value in rec.row_settings:
                    values.setdefault(name, set()).add(value)
        out[mode] = {name for name, seen in values.items() if len(seen) > 1}
    return out


def task_columns(present: Iterable[str]) -> list[str]:
    """The paper's five tasks in its order, then any other task present (e.g. the demo tasks)."""
    return list(TASKS) + sorted(set(present) - set(TASKS))


def build_table(records: Iterable[RunRecord]) -> Table:
    latest, superseded = latest_per_row_and_task(records)
    varying = _varying_by_mode(latest)
    rows: dict[RowKey, Row] = {}
    for rec in sorted(latest, key=lambda r: _sort_key(r.row_key)):
        row = rows.setdefault(
            rec.row_key,
            Row(method=_method_label(rec, varying[rec.agent_mode]), model=rec.model, record=rec, cells={}),
        )
        row.cells[rec.task] = _cell(rec)
    return Table(tasks=task_columns(r.task for r in latest), rows=list(rows.values()), superseded=superseded)


def _cell(rec: RunRecord) -> Cell:
    def pct(value: float | None) -> float | None:
        return None if value is None else 100 * value

    return Cell(
        mean=100 * rec.mean,
        std=100 * rec.std,
        complete=rec.complete,
        ci_low=pct(rec.ci_low),
        ci_high=pct(rec.ci_high),
        n_items=rec.n_items,
        failed=rec.failed,
        cost_per_item=rec.cost_per_item,
        run_id=rec.run_id,
    )


def _title(task: str) -> str:
    return TASK_TITLES.get(task, task)


def _grid(table: Table, cell: Callable[[Cell], str]) -> list[list[str]]:
    return [
        [row.method, row.model, *(cell(row.cells[t]) if t in row.cells else MISSING for t in table.tasks)]
        for row in table.rows
    ]


def to_markdown(table: Table) -> str:
    header = ["method", "model", *(_title(t) for t in table.tasks)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cells) + " |" for cells in _grid(table, Cell.text)]
    if table.has_incomplete:
        lines += ["", INCOMPLETE_NOTE]
    return "\n".join(lines) + "\n"


def cost_markdown(table: Table) -> str:
    """The same rows and columns as Table 1, each cell its cost per item and its failed items (no
    scored answer; counted incorrect in the metric), so a cheap or a fragile cell shows."""
    header = ["method", "model", *(_title(t) for t in table.tasks)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cells) + " |" for cells in _grid(table, Cell.cost_text)]
    return "\n".join(lines) + "\n"


CELL_COLUMNS = [
    *("method", "model", "task", "mean", "std", "ci_low", "ci_high"),
    *("n_items", "failed", "cost_per_item_usd", "complete", "run_id"),
]


def cells_csv(table: Table) -> str:
    """Every cell on its own line with all it knows (percent, USD per item), for spreadsheets."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CELL_COLUMNS)
    for row in table.rows:
        for task in table.tasks:
            if (cell := row.cells.get(task)) is None:
                continue
            values = (cell.ci_low, cell.ci_high, cell.n_items, cell.failed, cell.cost_per_item)
            blank = ["" if v is None else str(round(v, 6)) for v in values]
            head = [row.method, row.model, task, round(cell.mean, 4), round(cell.std, 4)]
            writer.writerow([*head, *blank, cell.complete, cell.run_id])
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
    header = ["Method", "Model", *(latex_escape(_title(t)) for t in table.tasks)]
    body = [[latex_escape(c) for c in cells[:2]] + cells[2:] for cells in _grid(table, Cell.latex)]
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
    writer.writerow(["method", "model", *table.tasks])
    writer.writerows(_grid(table, Cell.text))
    return buf.getvalue()


# ----------------------------------------------------------------------------- published numbers


def comparison_markdown(table: Table) -> str:
    """Each of our rows that matches a published configuration, with the published row and the
    difference in percentage points; then the whole published table for reference."""
    tasks = [t for t in table.tasks if t in TASKS]
    header = ["method", "model", *(_title(t) for t in tasks)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
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
    out = [
        "## Ours vs published",
        "",
        *lines,
        "",
        "## Published Table 1",
        "",
        published_markdown(),
        "",
        "## Published Table 3 (GIANT x1, T=20, S=1000, without and with the CONCH tool; no std quoted)",
        "",
        conch_markdown(),
        "",
        f"\\* confirmed by the abstract. {CAVEAT}",
    ]
    return "\n".join(out) + "\n"


def _inside(ours: Cell | None, published: PublishedCell | None) -> str:
    """ "yes [low, high]" when the published mean lies inside our bootstrap 95% interval, "no
    [low, high]" when it does not, "-" when either side is missing or our run logged no interval."""
    if ours is None or published is None or (holds := ours.holds(published.mean)) is None:
        return MISSING
    return f"{'yes' if holds else 'no'} [{ours.ci_low:.1f}, {ours.ci_high:.1f}]"


def conch_markdown() -> str:
    header = ["method", *(_title(t) for t in TASKS)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for index, method in enumerate(("GIANT x1", "GIANT x1 + CONCH")):
        lines.append("| " + " | ".join([method, *(f"{CONCH_ABLATION[t][index]:.1f}" for t in TASKS)]) + " |")
    return "\n".join(lines)


def published_markdown() -> str:
    header = ["method", *(_title(t) for t in TASKS)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for prow in TABLE1:
        cells = [c.text() if (c := prow.cells.get(t)) else MISSING for t in TASKS]
        lines.append("| " + " | ".join([prow.method, *cells]) + " |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- figures


def _series_figure(
    records: list[RunRecord], x_setting: str, *, xlabel: str, title: str, path: Path, log_x: bool = False
) -> Path | None:
    """One line per task and row setting other than x, drawn when it has at least two x values;
    None when no such line exists. Only runs whose mode makes x a row setting take part."""
    series: dict[tuple[object, ...], dict[int, RunRecord]] = {}
    for rec in records:
        names = [name for name, _ in rec.row_settings]
        x = rec.settings.get(x_setting)
        if x is not None and x_setting in names:
            others = tuple(item for item in rec.row_settings if item[0] != x_setting)
            key = (rec.task, rec.agent_mode, rec.runs_per_item, others, rec.model)
            series.setdefault(key, {})[x] = rec
    lines = {key: points for key, points in series.items() if len(points) >= 2}
    if not lines:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5))

    def order(points: dict[int, RunRecord]) -> tuple[object, ...]:
        rec = next(iter(points.values()))
        return (rec.task, *_sort_key(rec.row_key))

    for by_x in sorted(lines.values(), key=order):
        points = sorted(by_x.items())
        rec = points[0][1]
        votes = f" x{rec.runs_per_item}" if rec.runs_per_item > 1 else ""
        size = f" S={rec.S}" if x_setting == "max_steps" and rec.S else ""
        label = f"{_title(rec.task)} · {rec.agent_mode}{votes}{size} · {rec.model}"
        ax.errorbar(
            [x for x, _ in points],
            [100 * r.mean for _, r in points],
            yerr=[100 * r.std for _, r in points],
            marker="o",
            capsize=3,
            label=label,
        )
    if log_x:
        ax.set_xscale("log")
        ax.minorticks_off()
    xs = sorted({x for by_x in lines.values() for x in by_x})
    ax.set_xticks(xs, [str(x) for x in xs])  # the values actually run, not matplotlib's grid
    ax.set_xlabel(xlabel)
    ax.set_ylabel("metric (%) ± bootstrap std")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def scaling_figure(records: list[RunRecord], path: Path) -> Path | None:
    """Metric vs step limit T per task (paper: rises fast, plateaus around T = 10-15)."""
    return _series_figure(
        records, "max_steps", xlabel="step limit T", title="Scaling with navigation steps", path=path
    )


def thumbnail_figure(records: list[RunRecord], path: Path) -> Path | None:
    """Metric vs thumbnail long side (paper sweep 250..4000 px)."""
    return _series_figure(
        records,
        "thumbnail_size",
        xlabel="thumbnail long side (px)",
        title="Thumbnail resolution",
        path=path,
        log_x=True,
    )


# ----------------------------------------------------------------------------- the report


class Report(BaseModel):
    table: Table
    files: list[Path]
    skipped_figures: list[str]  # figures without data (no series with two x values)
    run_id: str | None = None  # the MLflow "report" run


def write_report(records: list[RunRecord], out_dir: Path, *, published: bool = False) -> Report:
    out_dir.mkdir(parents=True, exist_ok=True)
    table = build_table(records)
    files = []
    for name, text in (
        ("table1.md", to_markdown(table)),
        ("table1.tex", to_latex(table)),
        ("table1.csv", to_csv(table)),
        ("table1_cost.md", cost_markdown(table)),
        ("table1_cells.csv", cells_csv(table)),
    ):
        (out_dir / name).write_text(text, encoding="utf-8")
        files.append(out_dir / name)
    if published:
        (out_dir / "table1_vs_published.md").write_text(comparison_markdown(table), encoding="utf-8")
        files.append(out_dir / "table1_vs_published.md")
    latest, _ = latest_per_row_and_task(records)
    skipped = []
    for name, make in (("scaling.png", scaling_figure), ("thumbnail_resolution.png", thumbnail_figure)):
        made = make(latest, out_dir / name)
        if made is None:
            (out_dir / name).unlink(missing_ok=True)  # a stale figure from an earlier report would mislead
            skipped.append(name)
        else:
            files.append(made)
    return Report(table=table, files=files, skipped_figures=skipped)


def log_report(report: Report, *, experiment: str, sweep_id: str | None = None) -> str:
    """Keep the rendered files as artifacts of a run tagged giant.role=report (under the sweep's
    parent run when a sweep id is given), so the UI shows the table beside the runs it summarises."""
    exp = mlflow.MlflowClient().get_experiment_by_name(experiment)
    assert exp is not None  # load_runs found runs in it
    tags = {ROLE_TAG: REPORT_ROLE}
    if sweep_id:
        tags[SWEEP_ID_TAG] = sweep_id
        parents = mlflow.search_runs(
            experiment_ids=[exp.experiment_id],
            filter_string=tag_filter(SWEEP_ID_TAG, sweep_id),
            output_format="list",
        )
        assert isinstance(parents, list)
        parent = next((r for r in parents if r.data.tags.get(ROLE_TAG) == SWEEP_ROLE), None)
        if parent is not None:
            tags[PARENT_TAG] = parent.info.run_id
    with mlflow.start_run(experiment_id=exp.experiment_id, run_name="report", tags=tags) as run:
        for path in report.files:
            mlflow.log_artifact(str(path), artifact_path="report")
    return run.info.run_id
