"""Each slide failure reaches the results with the status and setup cause a rerun relies on.

A slide with no file is `slide_missing` (cause `slide_missing`: skip_missing drops it, the breaker
ignores it); a path leaving the root and a file that cannot be decoded are `slide_error` (cause
`slide_unreadable`). Real runner, real locator, real OpenSlide on a file the test corrupts.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from giant.agent.episode import run_episode
from giant.eval.causes import trajectory_cause
from giant.record import RESULTS_FILE, read_results

from .runner_fixtures import AGENT, evaluate, make_items, random_provider


def test_the_runner_records_the_cause_of_each_slide_failure(wsi_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "wsi"
    root.mkdir()
    shutil.copy(wsi_root / "a.svs", root / "a.svs")
    (root / "corrupt.svs").write_bytes(b"II*\x00" + b"\x00" * 64)  # a TIFF header, then nothing
    items = make_items(4, ["a.svs", "gone.svs", "corrupt.svs", "../a.svs"])
    asyncio.run(evaluate(items, root, random_provider(), tmp_path / "out"))

    records = {r.key: r for r in read_results(tmp_path / "out" / RESULTS_FILE)}
    got = {key: (r.status, r.cause) for key, r in records.items()}
    assert got == {
        "demo/0": ("answered", None),
        "demo/1": ("slide_missing", "slide_missing"),
        "demo/2": ("slide_error", "slide_unreadable"),
        "demo/3": ("slide_error", "slide_unreadable"),
    }
    assert "gone.svs" in records["demo/1"].reason and "not found" in records["demo/1"].reason
    assert "corrupt.svs" in records["demo/2"].reason
    assert "leaves the WSI root" in records["demo/3"].reason
    assert all(records[key].calls == 0 for key in ("demo/1", "demo/2", "demo/3"))  # nothing paid


def test_a_slide_gone_after_the_lookup_is_missing_not_unreadable(tmp_path: Path) -> None:
    """The runner locates slides before the run; one deleted since is still a missing slide."""
    item = make_items(1, ["vanished.svs"])[0]
    traj = asyncio.run(run_episode(item, tmp_path / "vanished.svs", random_provider(), AGENT, out_dir=None))
    assert traj.status == "slide_missing" and trajectory_cause(traj) == "slide_missing"
    assert "vanished.svs" in traj.reason and traj.totals.calls == 0
