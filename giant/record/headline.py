"""The navigation figures a researcher looks for first, in one wording for the job's closing line,
the sweep's end and report.html's header: the evidence hit rate with its 95% bootstrap interval (when
the job has annotations), the finest µm/px reached, the tissue coverage and the revisits, each with its
unit. summary.json's `navigation` holds them all, with the rest of docs/navigation.md's figures."""

from __future__ import annotations

from giant.record.summary import NavigationSummary


def _percent(share: float) -> str:
    return f"{100 * share:.1f}%"


def navigation_figures(nav: NavigationSummary | None) -> list[tuple[str, str]]:
    """(name, value with its unit) of each figure the job measured, in the order they are read."""
    if nav is None:
        return []
    figures = []
    if nav.hit_rate is not None:
        hit = nav.hit_rate
        interval = f"95% interval {_percent(hit.ci_low)}–{_percent(hit.ci_high)}"
        value = f"{_percent(hit.point)} ({interval}, {nav.annotated} annotated item-runs)"
        figures.append(("evidence hit rate", value))
    if nav.finest_mpp is not None:
        figures.append(("finest", f"{nav.finest_mpp:.2f} µm/px (median over item-runs)"))
    if nav.coverage is not None:
        figures.append(("tissue coverage", _percent(nav.coverage)))
    if nav.revisits is not None:
        figures.append(("revisits", f"{_percent(nav.revisits)} of crop area"))
    return figures


def navigation_phrase(nav: NavigationSummary | None) -> str:
    """The figures as one clause ("" when none was measured)."""
    return "; ".join(f"{name} {value}" for name, value in navigation_figures(nav))
