"""Published numbers (paper_facts §7; GIANT_FACTS §11), as data, so tables can show them beside ours.

Every row names its source (paper, version, arXiv id) in published.yaml beside this module: GIANT v1's
Table 1 (arXiv 2511.19652v1) and the patch-design study's GPT-5 rows (arXiv 2606.12407). A second
version of a paper is a second source whose rows reuse the method names: `published_rows_for` then
gives both, each shown with its own source, with no code change. `Cell.confirmed` marks the figures
confirmed by an abstract; each source's note says what the rest are.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from giant.agent.modes import find_mode
from giant.agent.modes.base import SettingValue

TASKS: tuple[str, ...] = ("tcga", "gtex", "panda", "tcga_slidebench", "tcga_expert_vqa")
TASK_TITLES: dict[str, str] = {
    "tcga": "TCGA",
    "gtex": "GTEx",
    "panda": "PANDA",
    "tcga_slidebench": "SlideBenchVQA",
    "tcga_expert_vqa": "ExpertVQA",
}
PUBLISHED_MODEL = "gpt-5"
PUBLISHED_FILE = Path(__file__).with_name("published.yaml")
ABLATIONS_FILE = Path(__file__).with_name("published_tools.yaml")


class Cell(BaseModel):
    """A published cell in percent (mean +- bootstrap std)."""

    model_config = ConfigDict(frozen=True)
    mean: float
    std: float | None  # None: the paper quotes no std (Table 3, the patch-design study)
    confirmed: bool = False

    def text(self) -> str:
        spread = "" if self.std is None else f" ± {self.std:.1f}"
        return f"{self.mean:.1f}{spread}" + ("*" if self.confirmed else "")


class Source(BaseModel):
    """Where published numbers come from: a paper, its version (in the arXiv id) and the table."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    title: str
    arxiv: str
    table: str
    model: str
    note: str = ""

    @property
    def cite(self) -> str:
        """ "GIANT v1, arXiv 2511.19652v1, Table 1" """
        return f"{self.title}, arXiv {self.arxiv}, {self.table}"


class PublishedRow(BaseModel):
    model_config = ConfigDict(frozen=True)
    method: str
    cells: dict[str, Cell]  # task -> cell; a task the paper leaves blank is absent
    source: Source | None = None  # None: a row built in code (a tool ablation's, which names its own)


class _RowEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    method: str
    source: str
    cells: dict[str, float | tuple[float, float]]
    confirmed: tuple[str, ...] = ()


class _Published(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sources: dict[str, Source]
    rows: list[_RowEntry] = Field(min_length=1)

    @model_validator(mode="after")
    def _known(self) -> _Published:
        for row in self.rows:
            if row.source not in self.sources:
                raise ValueError(f"published row '{row.method}' names unknown source '{row.source}'")
            unknown = set(row.cells) - set(TASKS)
            if unknown:
                raise ValueError(f"published row '{row.method}' has unknown tasks {sorted(unknown)}")
        return self


@functools.cache
def sources() -> dict[str, Source]:
    return _load().sources


@functools.cache
def published_rows() -> tuple[PublishedRow, ...]:
    """Every published row, in the file's order, each with its source."""
    data = _load()
    return tuple(
        PublishedRow(
            method=entry.method,
            source=data.sources[entry.source],
            cells={
                task: Cell(
                    mean=value if isinstance(value, float | int) else value[0],
                    std=None if isinstance(value, float | int) else value[1],
                    confirmed=task in entry.confirmed,
                )
                for task, value in entry.cells.items()
            },
        )
        for entry in data.rows
    )


def rows_of(source: str) -> tuple[PublishedRow, ...]:
    return tuple(row for row in published_rows() if row.source == sources()[source])


@functools.cache
def _load() -> _Published:
    return _Published.model_validate(yaml.safe_load(PUBLISHED_FILE.read_text(encoding="utf-8")))


class ToolAblation(BaseModel):
    """A published tool ablation (paper Table 3): the Table 1 row the tool was added to (`base`),
    without and with the tool, per task in percent (point values; no std quoted)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)
    tool: str  # the tool's registered name, as agent.tools carries it
    source: str  # where it is published (a key of published.yaml's sources)
    table: str  # the table of that source
    base: str
    method: str  # the published row of a run with the tool
    title: str  # the heading of the published table
    columns: tuple[str, str]  # the method names without and with the tool
    without: dict[str, float]
    with_tool: dict[str, float] = Field(alias="with")

    @property
    def row(self) -> PublishedRow:
        return PublishedRow(
            method=self.method,
            cells={task: Cell(mean=v, std=None) for task, v in self.with_tool.items()},
            source=sources()[self.source].model_copy(update={"table": self.table}),
        )


@functools.cache
def tool_ablations() -> dict[str, ToolAblation]:
    """The published tool ablations by tool name, from published_tools.yaml beside this module."""
    data = yaml.safe_load(ABLATIONS_FILE.read_text(encoding="utf-8")) or {}
    return {name: ToolAblation.model_validate({"tool": name, **entry}) for name, entry in data.items()}


def published_row_for(
    agent_mode: str,
    runs_per_item: int,
    settings: Mapping[str, SettingValue],
    tools: tuple[str, ...] = (),
) -> PublishedRow | None:
    """The first published row (GIANT v1 before a later version) a run of ours is comparable with."""
    rows = published_rows_for(agent_mode, runs_per_item, settings, tools)
    return rows[0] if rows else None


def published_rows_for(
    agent_mode: str,
    runs_per_item: int,
    settings: Mapping[str, SettingValue],
    tools: tuple[str, ...] = (),
) -> list[PublishedRow]:
    """The published rows a run of ours is comparable with (every version of the paper that has one),
    none when no published run used its configuration. The mode decides (giant.agent.modes: published
    GIANT runs all use T=20, S=1000; the thumbnail baseline 1024 px; the patch baseline 30 patches of
    224 px); `settings` are the run's agent settings by name (max_steps, crop_size, thumbnail_size, ...)."""
    mode = find_mode(agent_mode)
    method = mode.published_method(runs_per_item, settings) if mode is not None else None
    if tools:  # a run with one tool: the published ablation of that tool on the same Table 1 row
        ablation = tool_ablations().get(tools[0]) if len(tools) == 1 else None
        return [ablation.row] if ablation is not None and method == ablation.base else []
    return [row for row in published_rows() if row.method == method]
