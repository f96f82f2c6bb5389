"""Where a result came from: package versions, the git commit and the layouts the slides were found
in, recorded in summary.json."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from giant.data.slides import Located, SlideLocation, layout_counts
from giant.eval.resume import run_key
from giant.record.summary import Provenance

# summary.json name -> distribution name
PACKAGES = {
    "giant": "giant",
    "openai": "openai",
    "anthropic": "anthropic",
    "google-genai": "google-genai",
    "mlflow": "mlflow",
    "openslide": "openslide-python",
    "openslide-bin": "openslide-bin",
}


def package_versions() -> dict[str, str]:
    versions = {}
    for name, dist in PACKAGES.items():
        try:
            versions[name] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return versions


def git_commit() -> str | None:
    """The commit of the source tree giant runs from, "+dirty" when it has local changes; None
    outside a git checkout (an installed wheel) or without git."""
    try:
        head = _git("rev-parse", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if dirty else head


def _git(*args: str) -> str:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=True
    )
    return done.stdout.strip()


def build_provenance(config_hash: str, dataset_hash: str, slides: Iterable[Located] = ()) -> Provenance:
    """`slides`: the run's item locations; a slide shared by several items counts once."""
    distinct = {loc.path: loc.layout for loc in slides if isinstance(loc, SlideLocation)}
    return Provenance(
        run_key=run_key(config_hash, dataset_hash),
        config_hash=config_hash,
        dataset_hash=dataset_hash,
        git_commit=git_commit(),
        versions=package_versions(),
        slide_layouts=layout_counts(distinct.values()),
    )
