"""The scoring of one item-run as assessments on its trace, so MLflow's trace search, evaluation and
comparison can use it: the expected answer as an Expectation; whether the answer was correct, the
label parsed from it and why the run failed as CODE Feedback; and the navigation figures (a hit on the
annotated evidence, the finest µm/px, the tissue coverage) as CODE Feedback where they were measured.

A user's scorer then re-scores logged traces without a model call (docs/review.md):
`mlflow.genai.evaluate(data=mlflow.search_traces(...), scorers=[...])`.
"""

from __future__ import annotations

from collections.abc import Callable

import mlflow
from mlflow.entities import AssessmentSource, AssessmentSourceType

from giant.record.results import ResultRecord
from giant.tracking.names import (
    CODE_SOURCE_ID,
    CORRECT_ASSESSMENT,
    COVERAGE_ASSESSMENT,
    EXPECTED_ASSESSMENT,
    FAILURE_ASSESSMENT,
    FINEST_MPP_ASSESSMENT,
    HIT_ASSESSMENT,
    PARSED_ASSESSMENT,
)

CODE = AssessmentSource(source_type=AssessmentSourceType.CODE, source_id=CODE_SOURCE_ID)


def log_assessments(trace_id: str, record: ResultRecord, clean: Callable[[str], str]) -> None:
    """Every assessment of one item-run's trace (the global tracking URI is the job's store); `clean`
    scrubs the secrets from a text."""
    mlflow.log_expectation(trace_id=trace_id, name=EXPECTED_ASSESSMENT, value=record.truth, source=CODE)
    mlflow.log_feedback(trace_id=trace_id, name=CORRECT_ASSESSMENT, value=record.correct, source=CODE)
    mlflow.log_feedback(
        trace_id=trace_id,
        name=PARSED_ASSESSMENT,
        value=record.label,
        source=CODE,
        rationale=f"extracted by {record.method}" if record.method else "no label could be extracted",
    )
    if record.status != "answered" or record.label is None:
        mlflow.log_feedback(
            trace_id=trace_id,
            name=FAILURE_ASSESSMENT,
            value=record.cause or record.status,
            source=CODE,
            rationale=clean(record.reason) or None,
        )
    navigation = record.navigation
    if navigation is None:
        return
    figures = {
        HIT_ASSESSMENT: navigation.hit,
        FINEST_MPP_ASSESSMENT: navigation.finest_mpp,
        COVERAGE_ASSESSMENT: navigation.coverage,
    }
    for name, value in figures.items():
        if value is not None:
            mlflow.log_feedback(trace_id=trace_id, name=name, value=value, source=CODE)
