"""The paper's figures from the runs: metric vs step limit T, and metric vs thumbnail resolution."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: figures are built on servers and in CI
import matplotlib.pyplot as plt

from giant.tracking.tables.rows import RunRecord, sort_key, title


def _series_figure(
    records: list[RunRecord], x_setting: str, *, xlabel: str, title_text: str, path: Path, log_x: bool = False
) -> Path | None:
    """One line per task and row setting other than x, drawn when it has at least two x values;
    None when no such line exists. Only runs whose mode makes x a row setting take part."""
    series: dict[tuple[object, ...], dict[int, RunRecord]] = {}
    for rec in records:
        names = [name for name, _ in rec.row_settings]
        x = rec.settings.get(x_setting)
        if isinstance(x, int) and x_setting in names:
            others = tuple(item for item in rec.row_settings if item[0] != x_setting)
            key = (rec.task, rec.agent_mode, rec.runs_per_item, others, rec.model)
            series.setdefault(key, {})[x] = rec
    lines = {key: points for key, points in series.items() if len(points) >= 2}
    if not lines:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5))

    def order(points: dict[int, RunRecord]) -> tuple[object, ...]:
        rec = next(iter(points.values()))
        return (rec.task, *sort_key(rec.row_key))

    for by_x in sorted(lines.values(), key=order):
        points = sorted(by_x.items())
        rec = points[0][1]
        votes = f" x{rec.runs_per_item}" if rec.runs_per_item > 1 else ""
        size = f" S={rec.S}" if x_setting == "max_steps" and rec.S else ""
        label = f"{title(rec.task)} · {rec.agent_mode}{votes}{size} · {rec.model}"
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
    ax.set_title(title_text)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def scaling_figure(records: list[RunRecord], path: Path) -> Path | None:
    """Metric vs step limit T per task (paper: rises fast, plateaus around T = 10-15)."""
    return _series_figure(
        records, "max_steps", xlabel="step limit T", title_text="Scaling with navigation steps", path=path
    )


def thumbnail_figure(records: list[RunRecord], path: Path) -> Path | None:
    """Metric vs thumbnail long side (paper sweep 250..4000 px)."""
    return _series_figure(
        records,
        "thumbnail_size",
        xlabel="thumbnail long side (px)",
        title_text="Thumbnail resolution",
        path=path,
        log_x=True,
    )
