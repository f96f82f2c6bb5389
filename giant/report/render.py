"""The report's sections as one self-contained HTML page (giant/templates/report.html). This module
only gathers the numbers and texts; the template does the markup and escapes every value (a model can
write `<script>` as easily as anything else), and links go only to trajectory pages inside the job
folder."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from giant import pages
from giant.pages import Link
from giant.record import SKIPPED, TRAJECTORIES_DIR, ResultRecord
from giant.record.headline import method_label, navigation_figures
from giant.record.read import JobRecord
from giant.record.summary import Pacing, Totals
from giant.record.tool_use import tool_use
from giant.record.trajectory import Trajectory
from giant.report import costs, labels, navigation, overviews, taxonomy
from giant.report.facts import ItemRun, JobFacts, facts_of, gather
from giant.tools import TOOLS
from giant.tracking.artifacts import NO_ANSWER
from giant.tracking.viewer import Outlines
from giant.wsi.magnification import objective, standard_mpp

ROWS_SHOWN = 2000  # the lists of failed calls and of crops stop here; the counts above them are complete
EXAMPLES = 3  # item links per taxonomy row
Rows = list[tuple[Any, ...]]


def write_report(
    out_dir: Path,
    outlines: Callable[[Trajectory], Outlines] | None = None,
    mlflow_run_id: str | None = None,
    *,
    job: JobRecord | None = None,
) -> Path:
    """(Re)write report.html in a job folder from the job's record (`job`, in memory; else the folder's,
    read once), with the overviews of the slides several runs looked at (giant.report.overviews;
    `outlines` gives a slide's annotated target regions, as for the trajectory pages; `mlflow_run_id`
    the run the folder is logged to); returns its path."""
    facts = facts_of(job) if job is not None else gather(out_dir)
    path = facts.layout.report
    found = overviews.write_overviews(facts, outlines, mlflow_run_id)
    path.write_text(render(facts, found), encoding="utf-8")
    return path


def render(facts: JobFacts, slide_overviews: list[tuple[Link, int, int]] | None = None) -> str:
    """The page's text; every section's data is prepared here, its markup is the template's.
    `slide_overviews`: the overview pages written for it (link, runs, crops)."""
    records = [run.record for run in facts.runs]
    found = navigation.crops(facts.runs)
    causes = {run.record.slot: taxonomy.cause(run) for run in facts.runs}
    return pages.render(
        "report.html",
        title=f"Run report: {_job_name(facts)}",
        rows_shown=ROWS_SHOWN,
        no_answer=NO_ANSWER,
        header=_header(facts),
        items=_items(facts.runs, causes, navigation.per_run(found)),
        answers=_answers(records),
        taxonomy=_taxonomy(facts.runs, causes),
        navigation=_navigation(facts.runs, found),
        by_step=_by_step(facts),
        overviews=slide_overviews or [],
        tools=_tool_calls(facts.runs),
        tool_use=_tool_use(records),
        costs=_costs(records),
    )


# ----------------------------------------------------------------------------- small pieces


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "–"


def _money(value: float | None, digits: int = 4) -> str:
    return "unknown" if value is None else f"${value:.{digits}f}"


def _cost(totals: Totals) -> str:
    """The run's dollars; a self-hosted run's are its GPU time, said so."""
    if totals.gpu_cost_usd is None:
        return _money(totals.cost_usd)
    return f"{_money(totals.gpu_cost_usd)} of GPU time ({totals.active_s / 3600:.2f} h of run)"


def _num(value: float | None, fmt: str = ".3g") -> str:
    return "unknown" if value is None else format(value, fmt)


def _share(fraction: float | None) -> str:
    return "unknown" if fraction is None else f"{100 * fraction:.0f}%"


def _link(run: ItemRun) -> Link:
    """The item's trajectory page; only a relative path under trajectories/ becomes a link."""
    label = f"{run.record.key} #{run.record.run_index}"
    page = run.page
    if page is None:
        return Link(label)
    parts = PurePosixPath(page).parts
    if parts[0] != TRAJECTORIES_DIR or ".." in parts or "\\" in page or ":" in page:
        return Link(label)
    return Link(label, page)


def _job_name(facts: JobFacts) -> str:
    summary = facts.summary
    task = summary.benchmark if summary else ", ".join(sorted({r.record.benchmark for r in facts.runs}))
    first = facts.trajectories[0] if facts.trajectories else None
    if first is None:
        return task
    method = method_label(first.mode, first.max_steps, first.crop_size)
    return f"{task} · {first.provider}/{first.model} · {method}"


# ----------------------------------------------------------------------------- sections


def _header(facts: JobFacts) -> Rows:
    rows: Rows = [("job folder", str(facts.layout.out_dir)), ("item-runs", len(facts.runs))]
    summary = facts.summary
    if summary is not None:
        m = summary.metric
        rows += [
            (
                summary.metric_name,
                f"{m.point:.3f} (95% bootstrap interval {m.ci_low:.3f}–{m.ci_high:.3f}), n={summary.n_items}",
            ),
            *navigation_figures(summary.navigation),
            ("complete", "yes" if summary.complete else f"no: {summary.incomplete_reason}"),
            ("cost", _cost(summary.totals)),
            (
                "throughput",
                f"{summary.totals.output_tokens_per_s:.1f} output tokens/s, "
                f"{summary.totals.calls_per_min:.1f} calls/min over {summary.totals.active_s:.0f} s",
            ),
        ]
        if summary.pacing is not None:
            rows.append(("rate limits", _pacing(summary.pacing)))
    rows.append(("written", datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")))
    return rows


def _pacing(pacing: Pacing) -> str:
    """The provider's rate limits as the run met them (giant.eval.pacing)."""
    ratio = pacing.makespan_over_bound
    limits = ", ".join(f"{v:g} {k}/min" for k, v in pacing.limits.items()) or "none known"
    return (
        f"{pacing.requests_429} of {pacing.requests} requests answered 429, {pacing.paused_s:.0f} s paused; "
        f"{pacing.requests_per_min:.1f} requests/min, {pacing.tokens_per_min:.0f} tokens/min; makespan "
        f"{pacing.makespan_s:.0f} s"
        + (f" = {ratio:.2f}x its bound {pacing.bound_s:.0f} s" if ratio else "")
        + f" (limits: {limits})"
    )


ITEM_COLUMNS: tuple[tuple[str, str], ...] = (  # heading, sort kind ("num" or "text")
    ("item", "text"),
    ("task", "text"),
    ("status", "text"),
    ("why", "text"),
    ("correct", "text"),
    ("truth", "num"),
    ("label", "num"),
    ("steps", "num"),
    ("crops", "num"),
    ("cost", "num"),
    ("time s", "num"),
    ("finest µm/px", "num"),
    ("tissue", "num"),
)
FILTERS = ("task", "status", "why", "correct")


def _correct(run: ItemRun) -> str:
    if run.record.status == SKIPPED:
        return "not scored"
    return "yes" if run.record.correct else "no"


def _items(
    runs: list[ItemRun],
    causes: dict[tuple[str, int], str],
    reached: dict[tuple[str, int], tuple[float | None, float | None]],
) -> dict[str, Any]:
    """Each row's filter values (data-* attributes) and cells as (shown, sort value; "" sorts last)."""
    rows: list[dict[str, Any]] = []
    for run in runs:
        r = run.record
        mpp, tissue = reached.get(r.slot, (None, None))
        correct = _correct(run)
        filters = {"task": r.benchmark, "status": r.status, "why": causes[r.slot], "correct": correct}
        numbers = [
            (str(r.truth), r.truth),
            ("–" if r.label is None else str(r.label), r.label),
            (str(r.steps), r.steps),
            (str(r.crops), r.crops),
            (_money(r.dollars), r.dollars),
            (f"{r.seconds:.1f}", f"{r.seconds:.3f}"),
            (_num(mpp), mpp),
            (_share(tissue), tissue),
        ]
        rows.append(
            {
                "filters": filters,
                "link": _link(run),
                "sort_key": f"{r.key} {r.run_index:04d}",
                "reason": r.reason[:160] if r.reason and r.reason != r.status else None,
                "mark": {"yes": "yes", "no": "no"}.get(correct, "muted"),
                "cells": [(shown, "" if value is None else value) for shown, value in numbers],
            }
        )
    selects = [(name, sorted(Counter(row["filters"][name] for row in rows).items())) for name in FILTERS]
    return {"columns": ITEM_COLUMNS, "filters": selects, "rows": rows}


def _answers(records: list[ResultRecord]) -> dict[str, Any] | None:
    """Recall per class, the confusion matrix and the predicted labels; None without a scored run."""
    scored = [r for r in records if r.status != SKIPPED]
    if not scored:
        return None
    table = labels.confusion(scored)
    columns = list(table.columns)
    matrix = [
        (
            truth,
            [
                ("n diag" if c == truth else ("n fail" if c == NO_ANSWER else "n"), int(table.loc[truth, c]))
                for c in columns
            ],
        )
        for truth in table.index
    ]
    dist = labels.predicted(scored)
    return {
        "recalls": [(c.label, c.n, c.hits, f"{c.recall:.3f}") for c in labels.recalls(table)],
        "columns": columns,
        "matrix": matrix,
        "predicted": [
            (p.label, p.count, _pct(p.count, len(scored)), p.truly if p.label != NO_ANSWER else "–")
            for p in dist
        ],
        "top": labels.dominant(dist),
    }


def _taxonomy(runs: list[ItemRun], causes: dict[tuple[str, int], str]) -> dict[str, Any]:
    by_cause: dict[str, list[ItemRun]] = {}
    for run in runs:
        by_cause.setdefault(causes[run.record.slot], []).append(run)
    rows = [
        (name, text, len(members), _pct(len(members), len(runs)), [_link(run) for run in members[:EXAMPLES]])
        for name, text in taxonomy.CAUSES.items()
        if (members := by_cause.get(name, []))
    ]
    failing = sum(len(m) for name, m in by_cause.items() if name not in taxonomy.LABELLED)
    events = taxonomy.event_counts(runs)
    event_rows = [(name, text, events[name]) for name, text in taxonomy.EVENTS.items() if events[name]]
    event_rows += [(name, "", n) for name, n in events.items() if name not in taxonomy.EVENTS and n]
    calls = taxonomy.failed_calls(runs)
    return {
        "failing": failing,
        "total": len(runs),
        "failing_share": _pct(failing, len(runs)),
        "causes": rows,
        "events": event_rows,
        "calls": [_failed_call(failed) for failed in calls[:ROWS_SHOWN]],
        "n_calls": len(calls),
    }


def _failed_call(failed: taxonomy.FailedCall) -> tuple[Link, int, str, str]:
    """One failed call: item, call, kind and detail (the model's reply cut at 300 characters)."""
    detail = failed.detail if len(failed.detail) <= 300 else failed.detail[:300] + "…"
    raw = failed.call.raw_text
    if raw and failed.kind != "invalid_box":
        detail += f"\nreply: {raw[:300]}"
    return _link(failed.run), failed.call.index, failed.kind, detail


# Each magnification band's usual objective beside its µm/px ("0.3–0.6 µm/px (~20x)").
_BAND_OBJECTIVES = {
    navigation.band_label(edge, navigation.MPP_BANDS, " µm/px"): f" ({objective(standard_mpp(edge))})"
    for edge in navigation.MPP_BANDS
}


def _navigation(runs: list[ItemRun], found: list[navigation.Crop]) -> dict[str, Any]:
    known = [c.mpp for c in found if c.mpp is not None]
    return {
        "n_crops": len(found),
        "finest": f"{min(known):.3g}" if known else None,
        "finest_objective": objective(standard_mpp(min(known))) if known else None,
        "mpp": [
            (f"{b.label}{_BAND_OBJECTIVES.get(b.label, '')}", b.crops, b.items, _share(b.tissue_mean))
            for b in navigation.bands(found, navigation.MPP_BANDS, " µm/px", "mpp")
        ],
        "tissue": [
            (b.label, b.crops, b.items)
            for b in navigation.bands(found, navigation.TISSUE_BANDS, "", "tissue")
        ],
        "crops": [
            (_link(c.run), c.number, str(c.region.read), c.region.level, _num(c.mpp), _share(c.tissue))
            for c in found[:ROWS_SHOWN]
        ],
        "finest_rows": _tally_rows(navigation.finest_vs_correct(runs, found)),
        "steps_rows": _tally_rows(navigation.steps_vs_correct(runs)),
    }


CHART = (480, 160, 36)  # width, height, margin of the by-step curves (SVG user units)


def _by_step(facts: JobFacts) -> dict[str, Any] | None:
    """summary.json's µm/px and hit rate by crop number as two curves (polyline points in SVG units,
    numbers only) and their table; None before the summary recorded them."""
    nav = facts.summary.navigation if facts.summary else None
    if nav is None or not nav.mpp_by_step:
        return None
    mpp = nav.mpp_by_step
    known = [v for v in mpp if v is not None]
    top = max(known, default=1.0) or 1.0
    hits = nav.hit_rate_by_step
    rows = [
        (n, _num(m), "not annotated" if not hits else _share(hits[min(n, len(hits)) - 1]))
        for n, m in enumerate(mpp, 1)
    ]
    return {
        "size": CHART,
        "mpp_top": f"{top:.3g}",
        "mpp": _points(mpp, top),
        "hits": _points(list(hits), 1.0) if hits else None,
        "steps": len(mpp),
        "rows": rows,
    }


def _points(values: list[float | None], top: float) -> str:
    """`values` (by crop number, None skipped) as "x,y x,y ..." inside CHART, 0 at the bottom."""
    width, height, margin = CHART
    n = max(len(values) - 1, 1)
    return " ".join(
        f"{margin + (width - 2 * margin) * i / n:.1f},{height - margin - (height - 2 * margin) * v / top:.1f}"
        for i, v in enumerate(values)
        if v is not None
    )


def _tally_rows(tallies: list[navigation.Tally]) -> Rows:
    return [(t.label, t.item_runs, t.correct, _pct(t.correct, t.item_runs)) for t in tallies]


def _tool_calls(runs: list[ItemRun]) -> list[dict[str, Any]]:
    """Every tool's calls (agent.tools), one section per tool, as the tool describes each call
    (giant.tools); none when the run used no tool."""
    calls = [(run, call) for run in runs if run.trajectory for call in run.trajectory.tool_calls]
    sections = []
    for name, tool in TOOLS.items():
        mine = [(run, call, tool.describe(call)) for run, call in calls if call.tool == name]
        if not mine:
            continue
        rows = [
            (_link(run), call.call_index, shown["target"], [f"{a}  {b}" for a, b in shown["rows"]])
            for run, call, shown in mine[:ROWS_SHOWN]
        ]
        sections.append(
            {
                "title": tool.report_title,
                "note": tool.report_note,
                "n_calls": len(mine),
                "n_runs": len({run.record.slot for run, _, _ in mine}),
                "models": ", ".join(sorted({shown["model"] for _, _, shown in mine})),
                "rows": rows,
            }
        )
    return sections


def _tool_use(records: list[ResultRecord]) -> Rows:
    """Per tool called (giant.record.tool_use): the item-runs that called it, its calls, and accuracy
    with and without it: did consulting the tool come before correct answers?"""
    use = tool_use(records)
    rows: Rows = []
    for name in sorted({key.rsplit("_", 2)[0] for key in use if key.endswith("_item_runs")}):
        calling, correct = int(use[f"{name}_item_runs"]), int(use[f"{name}_correct"])
        others = [r for r in records if not (r.tool_calls or {}).get(name)]
        others_correct = sum(r.correct for r in others)
        rows.append(
            (
                name,
                calling,
                int(use[f"{name}_calls"]),
                f"{use[f'{name}_calls'] / len(records):.2f}",
                f"{correct}/{calling} ({_pct(correct, calling)})",
                f"{others_correct}/{len(others)} ({_pct(others_correct, len(others))})",
            )
        )
    return rows


def _costs(records: list[ResultRecord]) -> Rows:
    return [
        (
            c.task,
            c.item_runs,
            c.calls,
            c.calls_paid,
            c.tokens.calls_replayed,
            c.tokens.input_tokens,
            c.tokens.output_tokens,
            c.tokens.cached_input_tokens,
            f"{100 * c.cache_hit_ratio:.1f}%",
            _money(c.cost_usd),
            _money(c.cost_per_item_run),
            _money(c.tokens.replayed_cost_usd),
            c.tier_calls,
            c.tier_costs,
        )
        for c in costs.task_costs(records)
    ]
