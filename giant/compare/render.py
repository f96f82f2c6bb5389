"""A comparison as files: markdown, LaTeX (booktabs) and CSV tables, and one self-contained HTML
page (giant/templates/compare.html: inline style and script, links only to the trajectory pages copied
beside it)."""

from __future__ import annotations

import csv
import io

from giant import pages
from giant.compare.pairs import Comparison, Flip, PairResult
from giant.pages import Link
from giant.tracking.published import TASK_TITLES
from giant.tracking.safe_cells import csv_row, markdown_text
from giant.tracking.tables.formats import latex_escape
from giant.tracking.tables.rows import MISSING

ANSWER_CHARS = 160  # answers and questions are shortened in the tables; the trajectory page has them whole
PAIR_HEADER = [  # comparison.csv: fractions, not percent
    *("task", "metric", "a", "b", "n_common", "only_a", "only_b", "metric_a", "metric_b"),
    *("difference", "ci_low", "ci_high", "both_right", "both_wrong", "a_right_only", "b_right_only"),
    *("mcnemar_p", "p_holm"),
    *("hit_n", "hit_rate_a", "hit_rate_b", "hit_a_only", "hit_b_only", "hit_mcnemar_p"),  # evidence
]
HIT_COLUMNS = ["pair", "annotated items", "A hit rate (%)", "B hit rate (%)", "A only", "B only", "McNemar p"]


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def _points(value: float) -> str:
    return f"{100 * value:+.1f}"


def _p(value: float | None) -> str:
    if value is None:
        return MISSING
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _title(task: str) -> str:
    return TASK_TITLES.get(task, task)


def _interval(pair: PairResult) -> str:
    d = pair.difference
    return f"{_points(d.point)} [{_points(d.ci_low)}, {_points(d.ci_high)}]"


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= ANSWER_CHARS else flat[: ANSWER_CHARS - 1] + "…"


def _answer(label: int | None, text: str, status: str) -> str:
    """ "2: <answer text>", or for a failure "none (<status>)" and whatever text there was."""
    head = str(label) if label is not None else f"none ({status})"
    return f"{head}: {_short(text)}" if text else head


def _pair_cells(pair: PairResult) -> list[str]:
    return [
        f"{pair.a} vs {pair.b}",
        f"{pair.n_common} ({pair.only_a} / {pair.only_b})",
        _pct(pair.metric_a),
        _pct(pair.metric_b),
        _interval(pair),
        str(pair.both_right),
        str(pair.both_wrong),
        str(pair.a_only_right),
        str(pair.b_only_right),
        _p(pair.p_value),
        _p(pair.p_holm),
    ]


FLIP_HEADER = [
    *("task", "A", "B", "key", "flip", "truth", "label_a", "label_b"),
    *("answer_a", "answer_b", "question", "trajectory_a", "trajectory_b"),
]
PAIR_COLUMNS = [
    "pair",
    "common (only A / only B)",
    "A (%)",
    "B (%)",
    "B - A [95% CI]",
    "both right",
    "both wrong",
    "A right only",
    "B right only",
    "McNemar p",
    "p (Holm)",
]


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(map(markdown_text, cells)) + " |"


def _run_rows(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    keys = list(comparison.runs[0].differs)
    header = ["run", "name", "task", "metric", "items", "metric (%)", "cost/item", *keys, "source"]
    rows = [
        [
            r.letter,
            r.name,
            _title(r.task),
            r.metric_name,
            str(r.n_items),
            _pct(r.metric),
            "unknown" if r.cost_per_item is None else f"${r.cost_per_item:.4f}",
            *(r.differs[k] for k in keys),
            r.run_id or r.where,
        ]
        for r in comparison.runs
    ]
    return header, rows


def _tasks(comparison: Comparison) -> list[str]:
    return list(dict.fromkeys(pair.task for pair in comparison.pairs))


def to_markdown(comparison: Comparison) -> str:
    header, rows = _run_rows(comparison)
    lines = ["# Paired comparison", "", _md_row(header), "|" + "---|" * len(header)]
    lines += [_md_row(row) for row in rows]
    for task in _tasks(comparison):
        pairs = [p for p in comparison.pairs if p.task == task]
        lines += ["", f"## {_title(task)} ({pairs[0].metric_name})", ""]
        lines += [_md_row(PAIR_COLUMNS), "|" + "---|" * len(PAIR_COLUMNS)]
        lines += [_md_row(_pair_cells(pair)) for pair in pairs]
        hit_pairs = [pair for pair in pairs if pair.hits is not None]
        if hit_pairs:  # where the slides are annotated: did the runs find the evidence?
            lines += ["", f"Evidence hit rate, {_title(task)} (docs/navigation.md)", ""]
            lines += [_md_row(HIT_COLUMNS), "|" + "---|" * len(HIT_COLUMNS)]
            lines += [_md_row(_hit_cells(pair)) for pair in hit_pairs]
    if comparison.single:
        lines += [
            "",
            f"Only one run of: {', '.join(_title(t) for t in comparison.single)} (nothing to compare).",
        ]
    lines += ["", *(f"- {markdown_text(note)}" for note in comparison.notes)]
    lines += [f"- Paired bootstrap: {comparison.replicates} replicates, seed {comparison.seed}."]
    for pair in comparison.pairs:
        lines += ["", f"### Flipped items, {_title(pair.task)}, {pair.a} vs {pair.b} ({len(pair.flips)})", ""]
        if not pair.flips:
            lines.append("(none)")
            continue
        cols = ["item", "flip", "truth", f"{pair.a} answer", f"{pair.b} answer", "question", "trajectories"]
        lines += [_md_row(cols), "|" + "---|" * len(cols)]
        lines += [_md_row(_flip_cells(flip, pair, markdown=True)) for flip in pair.flips]
    return "\n".join(lines) + "\n"


def _flip_cells(flip: Flip, pair: PairResult, *, markdown: bool) -> list[str]:
    def link(letter: str, target: str | None) -> str:
        if target is None:
            return f"{letter}: -"
        return f"[{letter}]({target})" if markdown else target

    return [
        flip.key,
        flip.direction,
        str(flip.truth),
        _answer(flip.label_a, flip.answer_a, flip.status_a),
        _answer(flip.label_b, flip.answer_b, flip.status_b),
        _short(flip.question),
        " ".join((link(pair.a, flip.link_a), link(pair.b, flip.link_b))),
    ]


def to_latex(comparison: Comparison) -> str:
    """One booktabs tabular of every pair (needs \\usepackage{booktabs})."""
    cols = ["Task", "Pair", "$n$", "A (\\%)", "B (\\%)", "B $-$ A [95\\% CI]", "A only", "B only", "$p$"]
    holm = comparison.holm_applied
    if holm:
        cols.append("$p$ (Holm)")
    lines = [
        "% Written by scripts/compare.py; needs \\usepackage{booktabs}",
        "\\begin{tabular}{ll" + "r" * (len(cols) - 2) + "}",
        "\\toprule",
        " & ".join(cols) + " \\\\",
        "\\midrule",
    ]
    for pair in comparison.pairs:
        d = pair.difference
        cells = [
            latex_escape(_title(pair.task)),
            f"{pair.a} vs {pair.b}",
            str(pair.n_common),
            _pct(pair.metric_a),
            _pct(pair.metric_b),
            f"${_points(d.point)}$ [${_points(d.ci_low)}$, ${_points(d.ci_high)}$]",
            str(pair.a_only_right),
            str(pair.b_only_right),
            latex_escape(_p(pair.p_value)).replace("<", "$<$"),
        ]
        if holm:
            cells.append(latex_escape(_p(pair.p_holm)).replace("<", "$<$"))
        lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    lines += [
        f"% {run.letter}: {latex_escape(run.name)} ({run.run_id or run.where})" for run in comparison.runs
    ]
    return "\n".join(lines) + "\n"


def _hit_csv(pair: PairResult) -> list[str]:
    h = pair.hits
    if h is None:
        return [""] * 6
    return [str(h.n), f"{h.rate_a:.6f}", f"{h.rate_b:.6f}", str(h.a_only), str(h.b_only), f"{h.p_value:.6g}"]


def _hit_cells(pair: PairResult) -> list[str]:
    h = pair.hits
    assert h is not None
    return [f"{pair.a} vs {pair.b}", str(h.n), _pct(h.rate_a), _pct(h.rate_b), str(h.a_only), str(h.b_only),
            _p(h.p_value)]  # fmt: skip


def to_csv(comparison: Comparison) -> str:
    """One row per pair, numbers as fractions (the tables print percent)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(PAIR_HEADER)
    for pair in comparison.pairs:
        d = pair.difference
        writer.writerow(
            csv_row(
                [
                    pair.task,
                    pair.metric_name,
                    pair.a,
                    pair.b,
                    pair.n_common,
                    pair.only_a,
                    pair.only_b,
                    f"{pair.metric_a:.6f}",
                    f"{pair.metric_b:.6f}",
                    f"{d.point:.6f}",
                    f"{d.ci_low:.6f}",
                    f"{d.ci_high:.6f}",
                    pair.both_right,
                    pair.both_wrong,
                    pair.a_only_right,
                    pair.b_only_right,
                    "" if pair.p_value is None else f"{pair.p_value:.6g}",
                    "" if pair.p_holm is None else f"{pair.p_holm:.6g}",
                    *_hit_csv(pair),
                ]
            )
        )
    return buf.getvalue()


def flips_csv(comparison: Comparison) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(FLIP_HEADER)
    for pair in comparison.pairs:
        for f in pair.flips:
            writer.writerow(
                csv_row(
                    [
                        *(pair.task, pair.a, pair.b, f.key, f.direction, f.truth, f.label_a, f.label_b),
                        *(f.answer_a, f.answer_b, f.question, f.link_a or "", f.link_b or ""),
                    ]
                )
            )
    return buf.getvalue()


# ----------------------------------------------------------------------------- HTML


def to_html(comparison: Comparison) -> str:
    """One page (giant/templates/compare.html): the runs, per task the pairs (a row whose interval
    excludes zero is shaded), the notes, and the flipped items with a filter by direction."""
    header, rows = _run_rows(comparison)
    tasks = []
    for task in _tasks(comparison):
        pairs = [p for p in comparison.pairs if p.task == task]
        tasks.append(
            {
                "title": _title(task),
                "metric": pairs[0].metric_name,
                "rows": [_pair_cells(p) for p in pairs],
                "classes": ["clear" if p.difference.excludes_zero else "" for p in pairs],
            }
        )
    flips = [
        {
            "task": _title(pair.task),
            "pair": f"{pair.a} vs {pair.b}",
            "key": flip.key,
            "direction": flip.direction,
            "class": "flip-rw" if flip.right_in == "A" else "flip-wr",
            "truth": flip.truth,
            "answer_a": _answer(flip.label_a, flip.answer_a, flip.status_a),
            "answer_b": _answer(flip.label_b, flip.answer_b, flip.status_b),
            "question": _short(flip.question),
            "links": [Link(pair.a, flip.link_a), Link(pair.b, flip.link_b)],
        }
        for pair in comparison.pairs
        for flip in pair.flips
    ]
    notes = [
        *comparison.notes,
        f"Paired bootstrap: {comparison.replicates} replicates, seed {comparison.seed}.",
        "A shaded pair: its 95% interval of the difference excludes zero.",
    ]
    return pages.render(
        "compare.html",
        title="giant: paired comparison",
        runs={"head": header, "rows": rows},
        pair_columns=PAIR_COLUMNS,
        tasks=tasks,
        single=", ".join(_title(t) for t in comparison.single),
        notes=notes,
        flips=flips,
    )
