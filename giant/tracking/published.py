"""The paper's published numbers (paper_facts §7), as data, so tables can show them beside ours.

Only the ExpertVQA figures of GIANT x5, TITAN and SlideChat are confirmed by the paper's abstract;
every other figure is as quoted by a third-party reimplementation. `Published.confirmed` records
which is which, and every rendered comparison carries that caveat.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

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

# Paper Table 3: GIANT x1 without -> with the CONCH tool, percent (point values; no std quoted).
CONCH_ABLATION: dict[str, tuple[float, float]] = {
    "tcga": (32.3, 22.0),
    "gtex": (53.7, 63.8),
    "panda": (23.2, 25.5),
    "tcga_slidebench": (58.9, 54.3),
    "tcga_expert_vqa": (57.0, 60.9),
}
CONCH_BASE = "GIANT x1 (T=20, S=1000)"  # the Table 1 row the tool was added to
CONCH_ROW = PublishedRow(
    method="GIANT x1 + CONCH (T=20, S=1000)",
    cells={task: Cell(mean=with_tool, std=None) for task, (_, with_tool) in CONCH_ABLATION.items()},
)


def published_row_for(
    agent_mode: str, runs_per_item: int, settings: Mapping[str, int | None], tools: tuple[str, ...] = ()
) -> PublishedRow | None:
    """The published row a run of ours is comparable with, or None when no published run used its
    configuration. The mode decides (giant.agent.modes: published GIANT runs all use T=20, S=1000;
    the thumbnail baseline 1024 px; the patch baseline 30 patches of 224 px); `settings` are the
    run's agent settings by name (max_steps, crop_size, thumbnail_size, ...)."""
    mode = find_mode(agent_mode)
    method = mode.published_method(runs_per_item, settings) if mode is not None else None
    if tools:  # only GIANT x1 was published with a tool: the "+ CONCH" row of Table 3
        return CONCH_ROW if tools == ("conch",) and method == CONCH_BASE else None
    return next((row for row in TABLE1 if row.method == method), None)
