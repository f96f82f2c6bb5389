"""What a table is made of: one finished job as the tables see it (`RunRecord`), which runs share a
row (`RowKey`: only the settings that change the method), and the table itself (rows of cells, the
newest run of each row and task), with nothing read from MLflow or written to a file here."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath

from pydantic import BaseModel, ConfigDict

from giant.agent.modes import find_mode
from giant.agent.modes.base import SettingValue
from giant.tracking.published import TASK_TITLES, TASKS

MISSING = "-"
UNKNOWN_RANK = 1000  # rows of a mode no longer registered go last
TIERS: tuple[str, ...] = ("standard", "flex", "batch")  # billing tiers, as report/costs.py orders them


class TierSpend(BaseModel):
    """A run's paid calls and dollars by billing tier (MLflow metrics calls_paid, calls_flex,
    calls_batch, cost_usd, cost_flex_usd, cost_batch_usd): the standard tier is the rest."""

    model_config = ConfigDict(frozen=True)
    calls_paid: int
    calls_flex: int = 0
    calls_batch: int = 0
    cost_usd: float | None = None  # None: unknown (a model without a price)
    cost_flex_usd: float = 0.0
    cost_batch_usd: float = 0.0

    def calls(self, tier: str) -> int:
        flex, batch = self.calls_flex, self.calls_batch
        return {"flex": flex, "batch": batch}.get(tier, self.calls_paid - flex - batch)

    def cost(self, tier: str) -> float | None:
        if tier == "flex":
            return self.cost_flex_usd
        if tier == "batch":
            return self.cost_batch_usd
        return None if self.cost_usd is None else self.cost_usd - self.cost_flex_usd - self.cost_batch_usd


class RunRecord(BaseModel):
    """One finished job as the tables see it (metric values are fractions in [0, 1])."""

    model_config = ConfigDict(frozen=True)
    run_id: str
    task: str
    agent_mode: str
    model: str
    runs_per_item: int = 1
    # The run's integer agent settings by name (MLflow params `agent.<name>`; max_steps and
    # crop_size also from the T and S tags), and its mode's other row settings (patch mode's
    # inference, patch_mpp): what row keys, labels and the published lookup read.
    settings: dict[str, SettingValue] = {}
    tools: tuple[
        str, ...
    ] = ()  # MLflow param agent.tools (registered tool names): a tool makes another method
    mean: float
    std: float
    ci_low: float | None = None  # the bootstrap's 95% percentile interval (older runs: unknown)
    ci_high: float | None = None
    n_items: int | None = None
    failed: int | None = None  # items without a scored answer (n_items - n_scored)
    cost_per_item: float | None = None  # USD; None: unknown (a model without a price, or not logged)
    tiers: TierSpend | None = None  # calls and dollars per billing tier (None: not logged)
    complete: bool = True  # False: a budget stop or an interruption left items unmeasured
    # item-runs that measured nothing (summary.json n_unmeasured, the sum of its setup causes logged as
    # MLflow setup_<cause>): any leaves the run out of the table, whose metric would count them as the
    # model's failures
    unmeasured: int = 0
    # The per-run mean of a k-run job (giant.tracking.tables.load): k, the runs it averages; this record
    # then has runs_per_item 1 and the job's other fields. None: the run's own metric.
    per_run_mean_of: int | None = None
    prompts: str = ""  # MLflow param agent.prompts: a folder of its own prompt templates ("": shipped)
    dataset_digest: str = ""  # which version of the task's questions it scored ("": not recorded)
    # The run's navigation metrics (MLflow `nav_<name>`, docs/navigation.md) by name; empty: none logged
    navigation: dict[str, float] = {}
    start_time: int = 0  # a re-score: its source's start time
    rescored_at: int = 0  # a re-score: its own start time (0: not a re-score)

    @property
    def order(self) -> tuple[int, int]:
        """Which of two runs of a cell is newer (see RESCORE_TAG)."""
        return (self.start_time, self.rescored_at)

    @property
    def T(self) -> int | None:
        return _whole(self.settings.get("max_steps"))

    @property
    def S(self) -> int | None:
        return _whole(self.settings.get("crop_size"))

    @property
    def row_settings(self) -> tuple[tuple[str, SettingValue], ...]:
        """The settings that make this run's mode a different method (the mode's `row_settings`;
        none for a mode no longer registered)."""
        mode = find_mode(self.agent_mode)
        return tuple((name, self.settings.get(name)) for name in (mode.row_settings if mode else ()))

    @property
    def row_key(self) -> RowKey:
        """What makes two runs the same table row: only the settings that change the method."""
        return (self.agent_mode, self.runs_per_item, self.row_settings, self.model, self.tools, self.prompts)


# mode, runs per item, the mode's row settings, model, tools, prompt templates: two wordings are two rows
RowKey = tuple[str, int, tuple[tuple[str, SettingValue], ...], str, tuple[str, ...], str]


INCOMPLETE_MARK = "†"
INCOMPLETE_NOTE = (
    f"{INCOMPLETE_MARK} incomplete run (budget stop or interruption): not every item was "
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
    tiers: TierSpend | None = None
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
    # one line per task whose cells scored different versions of its questions (giant.data.digest)
    version_warnings: list[str] = []
    # one line per run left out for its unmeasured item-runs: never a cell (giant.eval.causes)
    left_out: list[str] = []

    @property
    def has_incomplete(self) -> bool:
        return any(not cell.complete for row in self.rows for cell in row.cells.values())


def title(task: str) -> str:
    """A task's column title (the paper's name for its five tasks)."""
    return TASK_TITLES.get(task, task)


def _mode_rank(name: str) -> int:
    mode = find_mode(name)
    return mode.table_rank if mode is not None else UNKNOWN_RANK


def sort_key(key: RowKey) -> tuple[object, ...]:
    """Rows in the paper's order: by the mode's table rank, then its settings, model and tools."""
    mode, k, settings, model, tools, prompts = key
    return (
        _mode_rank(mode),
        mode,
        k,
        tuple(_setting_order(value) for _, value in settings),
        model,
        tools,
        prompts,
    )


def _setting_order(value: SettingValue) -> tuple[int, float, str]:
    """Numbers in order, unknown (None) as 0 among them, then choices by name."""
    if isinstance(value, str):
        return (1, 0.0, value)
    return (0, float(value or 0), "")


def _whole(value: SettingValue) -> int | None:
    return value if isinstance(value, int) else None


def latest_per_row_and_task(records: Iterable[RunRecord]) -> tuple[list[RunRecord], int]:
    """The newest run of each (row, task); re-running a configuration replaces its cell.

    The same rule settles a one-run row ("x1") that both a one-run job and the per-run mean of a
    k-run job of the same configuration fill: the newer job's figure is the cell. (A k-run job that
    resumes a one-run job starts later, so its mean over k runs, the first of them the one-run
    job's, replaces the single run; `make_tables.py --filter "tags.runs_per_item = '1'"` leaves the
    k-run jobs out.)"""
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
    if rec.prompts:
        label += f" [prompts {PurePosixPath(rec.prompts).name}]"
    mode = find_mode(rec.agent_mode)
    details = [mode.row_detail(name, value) for name, value in rec.row_settings if mode and name in varying]
    return f"{label} ({', '.join(details)})" if details else label


def _varying_by_mode(records: list[RunRecord]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for mode in {r.agent_mode for r in records}:
        values: dict[str, set[SettingValue]] = {}
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
    """The newest measured run of each row and task as its cell; a run with unmeasured item-runs is
    no cell (its metric would count a server's or a slide's failures as the model's): a line in
    `left_out` names it instead."""
    records = list(records)
    measured = [rec for rec in records if not rec.unmeasured]
    latest, superseded = latest_per_row_and_task(measured)
    varying = _varying_by_mode(latest)
    rows: dict[RowKey, Row] = {}
    for rec in sorted(latest, key=lambda r: sort_key(r.row_key)):
        row = rows.setdefault(
            rec.row_key,
            Row(method=_method_label(rec, varying[rec.agent_mode]), model=rec.model, record=rec, cells={}),
        )
        row.cells[rec.task] = _cell(rec)
    return Table(
        tasks=task_columns(r.task for r in latest),
        rows=list(rows.values()),
        superseded=superseded,
        version_warnings=version_warnings(latest),
        left_out=[_left_out(rec) for rec in records if rec.unmeasured and rec.per_run_mean_of is None],
    )


def _left_out(rec: RunRecord) -> str:
    of = f" of {rec.n_items * rec.runs_per_item}" if rec.n_items is not None else ""
    return (
        f"run {rec.run_id} ({rec.task}, {rec.agent_mode}, {rec.model}) is no cell: {rec.unmeasured}{of} "
        "item-runs unmeasured (its incomplete_reason tag says why); rerun its command to measure them"
    )


def version_warnings(records: Iterable[RunRecord]) -> list[str]:
    """A line for each task whose runs side by side scored different versions of its questions (their
    dataset digests differ): their numbers are not over the same questions. Runs that recorded no
    digest (older ones) are left out of the check."""
    digests: dict[str, dict[str, list[str]]] = {}
    for rec in records:
        if rec.dataset_digest:
            digests.setdefault(rec.task, {}).setdefault(rec.dataset_digest, []).append(rec.run_id)
    return [
        f"warning: the {task} cells scored {len(seen)} different versions of its questions (dataset digests "
        + ", ".join(f"{digest} in run(s) {', '.join(runs)}" for digest, runs in sorted(seen.items()))
        + "); compare them only over the same questions"
        for task, seen in sorted(digests.items())
        if len(seen) > 1
    ]


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
        tiers=rec.tiers,
        run_id=rec.run_id,
    )
