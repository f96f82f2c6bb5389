"""The report's sections as one self-contained HTML page. Every text that came from a model, a
dataset or a file is escaped with `_e` (a model can write `<script>` as easily as anything else), and
links go only to trajectory pages inside the job folder."""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from giant.eval.results import SKIPPED, ResultRecord
from giant.job_layout import TRAJECTORIES_DIR
from giant.report import costs, labels, navigation, taxonomy
from giant.report.assets import CSS, SCRIPT
from giant.report.facts import ItemRun, JobFacts, gather
from giant.tracking.artifacts import NO_ANSWER

ROWS_SHOWN = 2000  # the lists of failed calls and of crops stop here; the counts above them are complete
EXAMPLES = 3  # item links per taxonomy row


def write_report(out_dir: Path) -> Path:
    """(Re)write report.html in a job folder from the files in it; returns its path."""
    facts = gather(out_dir)
    path = facts.layout.report
    path.write_text(render(facts), encoding="utf-8")
    return path


def render(facts: JobFacts) -> str:
    records = [run.record for run in facts.runs]
    found = navigation.crops(facts.runs)
    causes = {run.record.slot: taxonomy.cause(run) for run in facts.runs}
    sections = [
        _header(facts),
        _items(facts.runs, causes, navigation.per_run(found)),
        _answers(records),
        _taxonomy(facts.runs, causes),
        _navigation(facts.runs, found),
        _tool_calls(facts.runs),
        _costs(records),
    ]
    title = f"Run report: {_job_name(facts)}"
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{_e(title)}</h1>{''.join(sections)}<script>{SCRIPT}</script></body></html>\n"
    )


# ----------------------------------------------------------------------------- small pieces


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], numeric: frozenset[int] = frozenset()) -> str:
    """`head` is plain text, `rows` hold HTML already escaped; columns in `numeric` align right."""
    cls = [' class="n"' if i in numeric else "" for i in range(len(head))]
    th = "".join(f"<th{cls[i]}>{_e(h)}</th>" for i, h in enumerate(head))
    body = "".join(
        "<tr>" + "".join(f"<td{cls[i]}>{cell}</td>" for i, cell in enumerate(row)) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _cut_note(total: int) -> str:
    """Under a list cut at ROWS_SHOWN rows: how much of it is shown."""
    return f'<p class="muted">the first {ROWS_SHOWN} of {total} shown</p>' if total > ROWS_SHOWN else ""


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "–"


def _money(value: float | None, digits: int = 4) -> str:
    return "unknown" if value is None else f"${value:.{digits}f}"


def _num(value: float | None, fmt: str = ".3g") -> str:
    return "unknown" if value is None else format(value, fmt)


def _link(run: ItemRun, text: str | None = None) -> str:
    """The item's trajectory page; only a relative path under trajectories/ becomes a link."""
    label = _e(text if text is not None else f"{run.record.key} #{run.record.run_index}")
    page = run.page
    if page is None:
        return label
    parts = PurePosixPath(page).parts
    if parts[0] != TRAJECTORIES_DIR or ".." in parts or "\\" in page or ":" in page:
        return label
    return f'<a href="{_e(page)}">{label}</a>'


def _job_name(facts: JobFacts) -> str:
    summary = facts.summary
    task = summary.benchmark if summary else ", ".join(sorted({r.record.benchmark for r in facts.runs}))
    first = facts.trajectories[0] if facts.trajectories else None
    if first is None:
        return task
    return f"{task} · {first.provider}/{first.model} · {first.mode} T={first.max_steps} S={first.crop_size}"


# ----------------------------------------------------------------------------- sections


def _header(facts: JobFacts) -> str:
    rows = [("job folder", _e(facts.layout.out_dir)), ("item-runs", _e(len(facts.runs)))]
    summary = facts.summary
    if summary is not None:
        m = summary.metric
        rows += [
            (
                summary.metric_name,
                _e(f"{m.point:.3f} ± {m.std:.3f} (95% interval {m.ci_low:.3f}–{m.ci_high:.3f})")
                + _e(f", n={summary.n_items}"),
            ),
            ("complete", _e("yes" if summary.complete else f"no: {summary.incomplete_reason}")),
            ("cost", _e(_money(summary.totals.cost_usd))),
        ]
    rows.append(("written", _e(datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))))
    body = "".join(f'<tr><td class="muted">{_e(k)}</td><td>{v}</td></tr>' for k, v in rows)
    return f"<table>{body}</table>"


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


def _cell(text: str, value: object, *, html_text: str | None = None) -> str:
    """A cell and its sort value (empty: unknown, sorted last)."""
    shown = html_text if html_text is not None else _e(text)
    return f'<td data-v="{_e("" if value is None else value)}">{shown}</td>'


def _items(
    runs: list[ItemRun],
    causes: dict[tuple[str, int], str],
    reached: dict[tuple[str, int], tuple[float | None, float | None]],
) -> str:
    values: dict[str, list[str]] = {name: [] for name in FILTERS}
    rows = []
    for run in runs:
        r = run.record
        mpp, tissue = reached.get(r.slot, (None, None))
        row_values = {
            "task": r.benchmark,
            "status": r.status,
            "why": causes[r.slot],
            "correct": _correct(run),
        }
        for name, value in row_values.items():
            values[name].append(value)
        mark = {"yes": "yes", "no": "no"}.get(row_values["correct"], "muted")
        cells = [
            _cell("", f"{r.key} {r.run_index:04d}", html_text=_link(run)),
            _cell(r.benchmark, r.benchmark),
            _cell(
                r.status,
                r.status,
                html_text=f'{_e(r.status)}<div class="muted">{_e(r.reason[:160])}</div>'
                if r.reason and r.reason != r.status
                else None,
            ),
            _cell(causes[r.slot], causes[r.slot]),
            _cell(
                "",
                row_values["correct"],
                html_text=f'<span class="{mark}">{_e(row_values["correct"])}</span>',
            ),
            _cell(str(r.truth), r.truth),
            _cell("–" if r.label is None else str(r.label), r.label),
            _cell(str(r.steps), r.steps),
            _cell(str(r.crops), r.crops),
            _cell(_money(r.dollars), r.dollars),
            _cell(f"{r.seconds:.1f}", f"{r.seconds:.3f}"),
            _cell(_num(mpp), mpp),
            _cell("unknown" if tissue is None else f"{100 * tissue:.0f}%", tissue),
        ]
        data = " ".join(f'data-{name}="{_e(value)}"' for name, value in row_values.items())
        rows.append(f"<tr {data}>{''.join(cells)}</tr>")
    selects = []
    for name in FILTERS:
        options = "".join(
            f'<option value="{_e(v)}">{_e(v)} ({n})</option>'
            for v, n in sorted(Counter(values[name]).items())
        )
        selects.append(
            f'<label>{_e(name)} <select data-filter="{name}"><option value="">all</option>{options}'
            "</select></label>"
        )
    heads = "".join(
        f'<th data-sort="{kind}"{" class=n" if kind == "num" else ""}>{_e(name)}</th>'
        for name, kind in ITEM_COLUMNS
    )
    return (
        "<h2>Items</h2>"
        f'<p class="filters">{"".join(selects)} <span class="muted">showing <b id="shown">{len(runs)}</b>'
        f" of {len(runs)} item-runs; click a heading to sort</span></p>"
        f'<table id="items"><thead><tr>{heads}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def _answers(records: list[ResultRecord]) -> str:
    scored = [r for r in records if r.status != SKIPPED]
    if not scored:
        return "<h2>Answers</h2><p>No scored item-run.</p>"
    table = labels.confusion(scored)
    recall_rows = [(_e(c.label), _e(c.n), _e(c.hits), _e(f"{c.recall:.3f}")) for c in labels.recalls(table)]
    columns = list(table.columns)
    head = (
        "<tr><th>truth \\ predicted</th>" + "".join(f'<th class="n">{_e(c)}</th>' for c in columns) + "</tr>"
    )
    body = ""
    for truth in table.index:
        cells = ""
        for column in columns:
            cls = "n diag" if column == truth else ("n fail" if column == NO_ANSWER else "n")
            cells += f'<td class="{cls}">{_e(int(table.loc[truth, column]))}</td>'
        body += f"<tr><th>{_e(truth)}</th>{cells}</tr>"
    dist = labels.predicted(scored)
    dist_rows = [
        (_e(p.label), _e(p.count), _pct(p.count, len(scored)), _e(p.truly if p.label != NO_ANSWER else "–"))
        for p in dist
    ]
    top = labels.dominant(dist)
    flag = ""
    if top is not None:
        flag = (
            '<p class="flag" id="dominant-label">One label takes most predictions: '
            f"<b>{_e(top.label)}</b> for {top.count} of {top.answered} answered item-runs "
            f"({100 * top.share:.0f}%), of which {top.truly} truly have it. "
            "Accuracy can hide this; read the per-class recall.</p>"
        )
    return (
        "<h2>Answers</h2><h3>Recall per true class</h3>"
        + _table(("truth", "item-runs", "correct", "recall"), recall_rows, frozenset({1, 2, 3}))
        + '<h3>Confusion matrix</h3><p class="muted">rows: truth; columns: the label read from the answer; '
        f'"{NO_ANSWER}": no label (a failure).</p><table>{head}{body}</table>'
        + "<h3>Predicted labels</h3>"
        + flag
        + _table(("label", "item-runs", "share", "truly this label"), dist_rows, frozenset({1, 2, 3}))
    )


def _taxonomy(runs: list[ItemRun], causes: dict[tuple[str, int], str]) -> str:
    by_cause: dict[str, list[ItemRun]] = {}
    for run in runs:
        by_cause.setdefault(causes[run.record.slot], []).append(run)
    rows = []
    for name, description in taxonomy.CAUSES.items():
        members = by_cause.get(name, [])
        if not members:
            continue
        examples = ", ".join(_link(run) for run in members[:EXAMPLES])
        rows.append((_e(name), _e(description), _e(len(members)), _pct(len(members), len(runs)), examples))
    failing = sum(len(m) for name, m in by_cause.items() if name not in taxonomy.LABELLED)
    events = taxonomy.event_counts(runs)
    event_rows = [
        (_e(name), _e(text), _e(events[name])) for name, text in taxonomy.EVENTS.items() if events[name]
    ]
    event_rows += [(_e(name), "", _e(n)) for name, n in events.items() if name not in taxonomy.EVENTS and n]
    calls = taxonomy.failed_calls(runs)
    call_rows = "".join(render_call(failed) for failed in calls[:ROWS_SHOWN])
    more = _cut_note(len(calls))
    return (
        "<h2>Failure taxonomy</h2>"
        f'<p><b id="failing">{failing}</b> of {len(runs)} item-runs ended without a plain answer '
        f"({_pct(failing, len(runs))}); why each item-run ended as it did:</p>"
        + _table(("why", "what happened", "item-runs", "share", "examples"), rows, frozenset({2, 3}))
        + "<h3>Call-level events</h3>"
        + (_table(("event", "what", "count"), event_rows, frozenset({2})) if event_rows else "<p>None.</p>")
        + f"<details><summary>{len(calls)} failed calls</summary>"
        + "<table><thead><tr><th>item</th><th>call</th><th>kind</th><th>detail</th></tr></thead>"
        + f"<tbody>{call_rows}</tbody></table>{more}</details>"
    )


def render_call(failed: taxonomy.FailedCall) -> str:
    """One failed call as a table row (the model's text escaped, cut at 300 characters)."""
    detail = failed.detail if len(failed.detail) <= 300 else failed.detail[:300] + "…"
    raw = failed.call.raw_text
    if raw and failed.kind != "invalid_box":
        detail += f"\nreply: {raw[:300]}"
    return (
        f"<tr><td>{_link(failed.run)}</td><td class='n'>{failed.call.index}</td><td>{_e(failed.kind)}</td>"
        f'<td class="text">{_e(detail)}</td></tr>'
    )


def _navigation(runs: list[ItemRun], found: list[navigation.Crop]) -> str:
    mpp_rows = [
        (
            _e(b.label),
            _e(b.crops),
            _e(b.items),
            "unknown" if b.tissue_mean is None else f"{100 * b.tissue_mean:.0f}%",
        )
        for b in navigation.bands(found, navigation.MPP_BANDS, " µm/px", "mpp")
    ]
    tissue_rows = [
        (_e(b.label), _e(b.crops), _e(b.items))
        for b in navigation.bands(found, navigation.TISSUE_BANDS, "", "tissue")
    ]
    steps_rows = _tally_rows(navigation.steps_vs_correct(runs))
    finest_rows = _tally_rows(navigation.finest_vs_correct(runs, found))
    known = [c.mpp for c in found if c.mpp is not None]
    finest = f"; the finest reached {min(known):.3g} µm/px" if known else ""
    return (
        "<h2>Navigation</h2>"
        f"<p>{len(found)} crops{finest}. Microns per pixel of the image the model saw "
        "(slide mpp × box side / image side; 0.25 is about 40x, 1 about 10x); "
        "unknown when the slide records no mpp.</p>"
        + _table(("µm/px", "crops", "item-runs", "mean tissue"), mpp_rows, frozenset({1, 2, 3}))
        + "<h3>Tissue fraction of the crops</h3>"
        + _table(("tissue fraction", "crops", "item-runs"), tissue_rows, frozenset({1, 2}))
        + f"<details><summary>every crop ({len(found)})</summary>{_crop_list(found)}</details>"
        + "<h3>Finest magnification reached and correctness</h3>"
        + _table(("finest µm/px", "item-runs", "correct", "accuracy"), finest_rows, frozenset({1, 2, 3}))
        + "<h3>Steps used and correctness</h3>"
        + _table(("steps", "item-runs", "correct", "accuracy"), steps_rows, frozenset({0, 1, 2, 3}))
    )


def _tool_calls(runs: list[ItemRun]) -> str:
    """Every CONCH call (agent.tools=[conch]): what was scored and each hypothesis's score, highest
    first; nothing when the run used no tool."""
    calls = [(run, call) for run in runs if run.trajectory for call in run.trajectory.tool_calls]
    if not calls:
        return ""
    rows = [
        (
            _link(run),
            _e(call.call_index),
            _e(f"{call.image} {call.region}"),
            "<br>".join(_e(f"{score:+.3f}  {text}") for text, score in call.ranked()),
        )
        for run, call in calls[:ROWS_SHOWN]
    ]
    models = ", ".join(sorted({call.model for _, call in calls}))
    return (
        f"<h2>CONCH calls</h2><p>{len(calls)} calls in {len({run.record.slot for run, _ in calls})} "
        f"item-runs ({_e(models)}); the central square of the image the model meant, read from the "
        "slide at the model's input size; cosine similarity, highest first.</p>"
        + _table(("item", "call", "image scored (level 0)", "hypotheses"), rows, frozenset({1}))
        + _cut_note(len(calls))
    )


def _tally_rows(tallies: list[navigation.Tally]) -> list[tuple[str, ...]]:
    return [(_e(t.label), _e(t.item_runs), _e(t.correct), _pct(t.correct, t.item_runs)) for t in tallies]


def _crop_list(found: list[navigation.Crop]) -> str:
    rows = [
        (
            _link(crop.run),
            _e(crop.number),
            _e(crop.region.read),
            _e(crop.region.level),
            _e(_num(crop.mpp)),
            "unknown" if crop.tissue is None else f"{100 * crop.tissue:.0f}%",
        )
        for crop in found[:ROWS_SHOWN]
    ]
    more = _cut_note(len(found))
    head = ("item", "crop", "box read (level 0)", "level", "µm/px", "tissue")
    return _table(head, rows, frozenset({1, 3, 4, 5})) + more


def _costs(records: list[ResultRecord]) -> str:
    rows = [
        (
            _e(c.task),
            _e(c.item_runs),
            _e(c.calls),
            _e(c.calls_paid),
            _e(c.tokens.calls_replayed),
            _e(c.tokens.input_tokens),
            _e(c.tokens.output_tokens),
            _e(c.tokens.cached_input_tokens),
            f"{100 * c.cache_hit_ratio:.1f}%",
            _e(_money(c.cost_usd)),
            _e(_money(c.cost_per_item_run)),
            _e(_money(c.tokens.replayed_cost_usd)),
        )
        for c in costs.task_costs(records)
    ]
    head = (
        "task",
        "item-runs",
        "calls",
        "paid calls",
        "replayed calls",
        "input tokens",
        "output tokens",
        "cached input",
        "cache hit ratio",
        "cost",
        "cost per item-run",
        "replayed (paid before)",
    )
    return (
        "<h2>Cost and tokens</h2><p class='muted'>cost is new spend; replayed calls came from the ledger "
        "of paid calls at no cost (what they cost when first paid is in the last column).</p>"
        + _table(head, rows, frozenset(range(1, 12)))
    )
