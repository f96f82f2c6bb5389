"""The reviewed evidence hit rate beside the annotation-based one, per job and per method, for
`make tables` (giant.tracking.reviewed gives each rate). Only jobs a reviewer judged appear: a job
nobody reviewed has no reviewed rate, never a zero."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from mlflow import MlflowClient
from mlflow.entities import Trace

from giant.tracking.review import run_traces
from giant.tracking.reviewed import paired_review, reviewed_rate
from giant.tracking.tables.rows import RunRecord

HEADING = "## Reviewed evidence hit rate (a pathologist's verdicts, 95% Wilson interval)"
ANNOTATED = "hit_rate"  # the annotation-based rate's navigation metric (MLflow `nav_hit_rate`)


def reviewed_markdown(client: MlflowClient, records: Sequence[RunRecord]) -> str | None:
    """A table of every reviewed job, then one row per method pooling its jobs; None: none reviewed."""
    jobs = {record.run_id: record for record in records}  # a k-run job's two records are one job
    rows: list[str] = []
    pooled: dict[tuple[str, str], list[Trace]] = defaultdict(list)
    for run_id, record in jobs.items():
        traces = run_traces(client, client.get_run(run_id))
        rate = reviewed_rate(traces)
        if not rate.n:
            continue
        pooled[record.task, record.agent_mode] += traces
        annotated = record.navigation.get(ANNOTATED)
        by_annotation = "not annotated" if annotated is None else f"{annotated:.2f}"
        cells = (record.task, record.agent_mode, record.model, run_id[:8], by_annotation, rate.text())
        rows.append(f"| {' | '.join(cells)} |")
    if not rows:
        return None
    lines = [
        HEADING,
        "",
        "| task | method | model | run | annotation hit rate | reviewed hit rate |",
        "|---|---|---|---|---|---|",
        *rows,
    ]
    if len(rows) > len(pooled):  # some method has several reviewed jobs: its pooled rate too
        lines += ["", "| task | method | reviewed hit rate, all its jobs |", "|---|---|---|"]
        lines += [
            f"| {task} | {mode} | {reviewed_rate(traces).text()} |"
            for (task, mode), traces in sorted(pooled.items())
        ]
    return "\n".join(lines)


def reviewed_compare_lines(client: MlflowClient, runs: Sequence[tuple[str, str, str]]) -> list[str]:
    """compare's lines: each reviewed run's rate (`runs` are (letter, task, run id)), then, per task,
    the first run against each other one on the item-runs reviewed in both; [] when none reviewed."""
    traces = {letter: run_traces(client, client.get_run(run_id)) for letter, _, run_id in runs}
    rates = {letter: reviewed_rate(found) for letter, found in traces.items()}
    if not any(rate.n for rate in rates.values()):
        return []
    lines = [
        f"reviewed evidence hit rate {letter}: {rate.text()}" for letter, rate in rates.items() if rate.n
    ]
    first_of_task: dict[str, str] = {}
    for letter, task, _ in runs:
        first = first_of_task.setdefault(task, letter)
        if first != letter and rates[first].n and rates[letter].n:
            paired = paired_review(traces[first], traces[letter])
            lines.append(f"reviewed evidence, paired {first} vs {letter} ({task}): {paired.text()}")
    return lines
