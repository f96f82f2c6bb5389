"""A finished job's recorded answers scored again with other scoring settings, with no provider call.

results.jsonl keeps each episode's answer text (`prediction`, or in patch mode each patch's in
`answers`), so extraction, votes, metrics and the bootstrap can be recomputed from it alone. Only
answered item-runs (status `answered`, or `unparseable` when no label was read) are read again;
every other record (provider errors, timeouts, missing slides) keeps its status: those never had an
answer to score.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from giant.core import Item
from giant.errors import ConfigError
from giant.eval.scoring import outcome_fields, score_answers
from giant.eval.scoring_settings import ScoringSettings
from giant.eval.summarize import summarize
from giant.record import UNPARSEABLE, ResultRecord
from giant.record.summary import Summary, Totals

ANSWERED = "answered"


def changed_record(record: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """The source's resolved config (resolved_config.json layout: run keys at the top level) with
    the scoring keys of `changes` that are set; None keeps the source's value. Only scoring settings
    may change (the fields of ScoringSettings, run keys at the top level of the record): every other
    setting shaped the episodes, which are kept as they are."""
    scoring = tuple(ScoringSettings.model_fields)
    unknown = sorted(set(changes) - set(scoring))
    if unknown:
        raise ConfigError(f"{', '.join(unknown)}: not a scoring setting; a re-score changes only {scoring}")
    changed = {key: value for key, value in changes.items() if value is not None}
    for key, value in changed.items():  # a section (navigation) changes key by key: null keeps a key
        if isinstance(value, dict):
            changed[key] = {**(record.get(key) or {}), **{k: v for k, v in value.items() if v is not None}}
    return {**record, **changed}


def rescore_records(
    records: Sequence[ResultRecord], items: Sequence[Item], scoring: ScoringSettings
) -> list[ResultRecord]:
    """Each record with its answer read again; records without an answer are returned unchanged."""
    by_key = {item.key: item for item in items}
    return [
        _rescored(record, by_key[record.key], scoring)
        if record.status in (ANSWERED, UNPARSEABLE) and record.key in by_key
        else record
        for record in records
    ]


def _rescored(record: ResultRecord, item: Item, scoring: ScoringSettings) -> ResultRecord:
    scored = score_answers(record.prediction, record.answers, item, scoring)
    # The episode's own ending was "answered"; its reason is kept unless it was the scorer's.
    reason = "" if record.status == UNPARSEABLE else record.reason
    fields = {"status": ANSWERED, "reason": reason, "label": None, "correct": False}
    return record.model_copy(update=fields | outcome_fields(scored, item))


def rescore_summary(
    records: Sequence[ResultRecord],
    items: Sequence[Item],
    source: Summary,
    *,
    runs_per_item: int,
    seed: int,
    scoring: ScoringSettings,
) -> Summary:
    """summary.json of the re-scored records: the source's provenance, completeness, defects and
    timing (nothing ran again), the metrics recomputed with the new settings."""
    summary = summarize(
        records,
        items,
        dataset=source.benchmark,
        metric_name=source.metric_name,
        runs_per_item=runs_per_item,
        seed=seed,
        scoring=scoring,
        provenance=source.provenance,
        incomplete_reason=source.incomplete_reason,
        dataset_defects=source.dataset_defects,
    )
    timing = source.totals.model_dump(include=set(Totals.TIMED))
    return summary.model_copy(update={"totals": summary.totals.model_copy(update=timing)})
