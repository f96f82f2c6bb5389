"""fetch_slides' dry run needs the MultiPathQA CSV too: without the Hub (tests/hub.py) it stops in
one line within the bound, like run_eval."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hub import Run, assert_one_line_failure, closed_port, run_script, silent_hub


def _dry_run(hub_url: str, tmp: Path, *, dry: bool = True) -> Run:
    return run_script(
        "fetch_slides.py",
        "dataset=tcga",
        f"dry_run={str(dry).lower()}",
        f"paths.wsi_root={tmp / 'wsi'}",
        hub_url=hub_url,
        tmp=tmp,
    )


@pytest.mark.subprocess_job
def test_dry_run_without_the_hub_fails_at_once_in_one_line(tmp_path: Path) -> None:
    assert_one_line_failure(
        _dry_run(closed_port(), tmp_path), "fetch_slides", reason_ends="Connection refused"
    )


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_dry_run_gives_up_on_a_silent_hub_within_the_bound(tmp_path: Path) -> None:
    with silent_hub() as url:
        run = _dry_run(url, tmp_path)
    assert_one_line_failure(run, "fetch_slides", reason_ends="within 5 s; HF_HUB_ETAG_TIMEOUT can raise that")


@pytest.mark.subprocess_job
def test_a_fetch_that_fails_leaves_no_empty_slide_folder(tmp_path: Path) -> None:
    """The fetch creates the slide folder it writes to; failing before any slide, it removes it."""
    assert_one_line_failure(
        _dry_run(closed_port(), tmp_path, dry=False), "fetch_slides", reason_ends="Connection refused"
    )
    assert not (tmp_path / "wsi").exists()
