"""What a job's headline says, in one wording for the job's closing line, the sweep's end, report.html's
header and a comparison's run names: the method (`method_label`), and the navigation figures a
researcher looks for first: the evidence hit rate with its 95% bootstrap interval (when the job has
annotations), the finest µm/px reached, the tissue coverage and the revisits, each with its unit.
summary.json's `navigation` holds them all, with the rest of docs/navigation.md's figures."""

from __future__ import annotations

from giant.record.summary import NavigationSummary


def method_label(mode: object, max_steps: object, crop_size: object, runs_per_item: int = 1) -> str:
    """A method as every line and page names it: `giant T=20 S=1000`, `giant x5 T=20 S=1000` for a
    vote over k > 1 runs per item."""
    votes = f" x{runs_per_item}" if runs_per_item > 1 else ""
    return f"{mode}{votes} T={max_steps} S={crop_size}"


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
