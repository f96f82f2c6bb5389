"""The navigation figures where one looks (issue 42): the evidence hit rate with its interval, the
finest µm/px, the coverage and the revisits, each with its unit, in one wording for the job's closing
line and report.html's header."""

from __future__ import annotations

from giant.record.headline import navigation_figures, navigation_phrase
from giant.record.summary import Bootstrap, NavigationSummary


def _nav(**fields: object) -> NavigationSummary:
    return NavigationSummary.model_validate({"item_runs": 8, "steps": 3.0, "crops": 2.0, **fields})


def test_every_measured_figure_is_named_with_its_unit() -> None:
    hit = Bootstrap(point=0.625, mean=0.62, std=0.17, ci_low=0.25, ci_high=0.875, replicates=100, seed=0)
    nav = _nav(hit_rate=hit, annotated=8, finest_mpp=0.5, coverage=0.032, revisits=0.12)
    assert navigation_figures(nav) == [
        ("evidence hit rate", "62.5% (95% interval 25.0%–87.5%, 8 annotated item-runs)"),
        ("finest", "0.50 µm/px (median over item-runs)"),
        ("tissue coverage", "3.2%"),
        ("revisits", "12.0% of crop area"),
    ]


def test_figures_not_measured_are_left_out() -> None:
    """No annotations: no hit rate, never a 0% one; no mpp: no finest."""
    assert navigation_phrase(_nav(coverage=0.5)) == "tissue coverage 50.0%"
    assert navigation_phrase(_nav()) == "" and navigation_phrase(None) == ""
