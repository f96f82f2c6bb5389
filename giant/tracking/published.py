"""The paper's published numbers (paper_facts §7), as data, so tables can show them beside ours.

Only the ExpertVQA figures of GIANT x5, TITAN and SlideChat are confirmed by the paper's abstract;
every other figure is as quoted by a third-party reimplementation. `Published.confirmed` records
which is which, and every rendered comparison carries that caveat.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from giant.agent.modes import find_mode

TASKS: tuple[str, ...] = ("tcga", "gtex", "panda", "tcga_slidebench", "tcga_expert_vqa")
TASK_TITLES: dict[str, str] = {
    "tcga": "TCGA",
    "gtex": "GTEx",
    "panda": "PANDA",
    "tcga_slidebench": "SlideBenchVQA",
    "tcga_expert_vqa": "ExpertVQA",
}
PUBLISHED_MODEL = "gpt-5"
ABLATIONS_FILE = Path(__file__).with_name("published_tools.yaml")
CAVEAT = (
    "Published numbers are GPT-5 (Table 1 of arXiv 2511.19652); only the ExpertVQA figures of GIANT x5, "
    "TITAN and SlideChat are confirmed by the abstract, the rest are as quoted by a third-party "
    "reimplementation."
)


class Cell(BaseModel):
    """A published cell in percent (mean +- bootstrap std)."""

    model_config = ConfigDict(frozen=True)
    mean: float
    std: float | None  # None: the paper quotes no std (Table 3)
    confirmed: bool = False

    def text(self) -> str:
        spread = "" if self.std is None else f" ± {self.std:.1f}"
        return f"{self.mean:.1f}{spread}" + ("*" if self.confirmed else "")


class PublishedRow(BaseModel):
    model_config = ConfigDict(frozen=True)
    method: str
    cells: dict[str, Cell]  # task -> cell; a task the paper leaves blank is absent


def _row(
    method: str, values: list[tuple[float, float] | None], confirmed: tuple[str, ...] = ()
) -> PublishedRow:
    cells = {
        task: Cell(mean=v[0], std=v[1], confirmed=task in confirmed)
        for task, v in zip(TASKS, values, strict=True)
        if v is not None
    }
    return PublishedRow(method=method, cells=cells)


TABLE1: tuple[PublishedRow, ...] = (
    _row("Thumbnail 1024 px", [(9.2, 1.9), (36.5, 3.4), (12.2, 2.2), (54.8, 3.5), (50.0, 4.4)]),
    _row("Patch (30 x 224, vote)", [(12.8, 2.1), (43.7, 2.4), (21.3, 2.4), None, None]),
    _row("GIANT x1 (T=20, S=1000)", [(32.3, 3.5), (53.7, 3.4), (23.2, 2.3), (58.9, 3.5), (57.0, 4.5)]),
    _row(
        "GIANT x5 (vote)",
        [(29.3, 3.3), (60.7, 3.2), (25.4, 2.0), (59.4, 3.4), (62.5, 4.4)],
        confirmed=("tcga_expert_vqa",),
    ),
    _row(
        "TITAN (zero-shot)",
        [(88.8, 1.7), (96.3, 1.3), (27.5, 2.3), (39.6, 3.5), (43.8, 4.2)],
        confirmed=("tcga_expert_vqa",),
    ),
    _row(
        "SlideChat (zero-shot)",
        [(3.3, 1.2), (5.0, 0.0), (17.0, 0.4), (71.6, 3.3), (37.5, 4.3)],
        confirmed=("tcga_expert_vqa",),
    ),
)


class ToolAblation(BaseModel):
    """A published tool ablation (paper Table 3): the Table 1 row the tool was added to (`base`),
    without and with the tool, per task in percent (point values; no std quoted)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)
    tool: str  # the tool's registered name, as agent.tools carries it
    base: str
    method: str  # the published row of a run with the tool
    title: str  # the heading of the published table
    columns: tuple[str, str]  # the method names without and with the tool
    without: dict[str, float]
    with_tool: dict[str, float] = Field(alias="with")

    @property
    def row(self) -> PublishedRow:
        return PublishedRow(
            method=self.method, cells={task: Cell(mean=v, std=None) for task, v in self.with_tool.items()}
        )


@functools.cache
def tool_ablations() -> dict[str, ToolAblation]:
    """The published tool ablations by tool name, from published_tools.yaml beside this module."""
    data = yaml.safe_load(ABLATIONS_FILE.read_text(encoding="utf-8")) or {}
    return {name: ToolAblation.model_validate({"tool": name, **entry}) for name, entry in data.items()}


def published_row_for(
    agent_mode: str, runs_per_item: int, settings: Mapping[str, int | None], tools: tuple[str, ...] = ()
) -> PublishedRow | None:
    """The published row a run of ours is comparable with, or None when no published run used its
    configuration. The mode decides (giant.agent.modes: published GIANT runs all use T=20, S=1000;
    the thumbnail baseline 1024 px; the patch baseline 30 patches of 224 px); `settings` are the
    run's agent settings by name (max_steps, crop_size, thumbnail_size, ...)."""
    mode = find_mode(agent_mode)
    method = mode.published_method(runs_per_item, settings) if mode is not None else None
    if tools:  # a run with one tool: the published ablation of that tool on the same Table 1 row
        ablation = tool_ablations().get(tools[0]) if len(tools) == 1 else None
        return ablation.row if ablation is not None and method == ablation.base else None
    return next((row for row in TABLE1 if row.method == method), None)
