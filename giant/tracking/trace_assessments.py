"""The scoring of one item-run as assessments on its trace, so MLflow's trace search, evaluation and
comparison can use it: the expected answer as an Expectation; whether the answer was correct, the
label parsed from it and why the run failed as CODE Feedback; and the navigation figures (a hit on the
annotated evidence, the finest µm/px, the tissue coverage) as CODE Feedback where they were measured.

A user's scorer then re-scores logged traces without a model call (docs/review.md):
`mlflow.genai.evaluate(data=mlflow.search_traces(...), scorers=[...])`.
"""

from __future__ import annotations

from collections.abc import Callable

from mlflow.entities import Assessment, AssessmentSource, AssessmentSourceType, Expectation, Feedback

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


def assessments(record: ResultRecord, clean: Callable[[str], str]) -> list[Assessment]:
    """Every assessment of one item-run's trace, to be written with it in one step; `clean` scrubs
    the secrets from a text."""
    found: list[Assessment] = [
        Expectation(name=EXPECTED_ASSESSMENT, value=record.truth, source=CODE),
        Feedback(name=CORRECT_ASSESSMENT, value=record.correct, source=CODE),
        Feedback(
            name=PARSED_ASSESSMENT,
            value=record.label,
            source=CODE,
            rationale=f"extracted by {record.method}" if record.method else "no label could be extracted",
        ),
    ]
    if record.status != "answered" or record.label is None:
        cause = record.cause or record.status
        found.append(
            Feedback(
                name=FAILURE_ASSESSMENT, value=cause, source=CODE, rationale=clean(record.reason) or None
            )
        )
    navigation = record.navigation
    if navigation is not None:
        figures = {
            HIT_ASSESSMENT: navigation.hit,
            FINEST_MPP_ASSESSMENT: navigation.finest_mpp,
            COVERAGE_ASSESSMENT: navigation.coverage,
        }
        found += [
            Feedback(name=name, value=value, source=CODE)
            for name, value in figures.items()
            if value is not None
        ]
    return found
