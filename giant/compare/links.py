"""The flipped items' trajectories, copied beside the comparison so its links work wherever the
files go (the output folder, the MLflow artifact view, a copy sent to a colleague), and the question
of each flip read from them (results.jsonl does not keep the question)."""

from __future__ import annotations

from pathlib import Path

from giant.compare.pairs import Comparison
from giant.compare.sources import RunData
from giant.record import TRAJECTORIES_DIR, TRAJECTORY_PAGE, has_trajectory, read_trajectory


def attach_trajectories(comparison: Comparison, runs: list[RunData], out_dir: Path) -> int:
    """Copy each flipped item's trajectory of both runs to <out>/trajectories/<letter>/..., set the
    flips' links and questions; returns how many trajectory folders were copied. A trajectory that
    cannot be found leaves its link empty (the item is still listed)."""
    by_letter = {entry.letter: run for entry, run in zip(comparison.runs, runs, strict=True)}
    copied: dict[tuple[str, str], str | None] = {}

    def link(letter: str, relative: str | None) -> str | None:
        if relative is None:
            return None
        if (letter, relative) not in copied:
            target = _target(letter, relative)
            found = by_letter[letter].fetch_trajectory(relative, out_dir / target)
            page = out_dir / target / TRAJECTORY_PAGE
            copied[letter, relative] = f"{target}/{TRAJECTORY_PAGE}" if found and page.is_file() else None
        return copied[letter, relative]

    for pair in comparison.pairs:
        for flip in pair.flips:
            flip.link_a = link(pair.a, flip.trajectory_a)
            flip.link_b = link(pair.b, flip.trajectory_b)
            for letter, relative in ((pair.a, flip.trajectory_a), (pair.b, flip.trajectory_b)):
                if not flip.question and relative is not None:
                    flip.question = _question(out_dir / _target(letter, relative))
    return sum(1 for value in copied.values() if value is not None)


def _target(letter: str, relative: str) -> str:
    """trajectories/<letter>/<safe key>/run<k> inside the comparison's folder."""
    return f"{TRAJECTORIES_DIR}/{letter}/{relative.removeprefix(TRAJECTORIES_DIR + '/')}"


def _question(folder: Path) -> str:
    if not has_trajectory(folder):
        return ""
    try:
        return read_trajectory(folder).question
    except ValueError:  # pydantic's ValidationError too: a damaged trajectory only loses its question
        return ""
