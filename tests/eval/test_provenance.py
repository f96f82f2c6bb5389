"""summary.json's provenance says which layout each slide of the run was found in."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from giant.record.summary import Summary
from tests.eval.runner_fixtures import SLIDES, evaluate, make_items, random_provider


def test_summary_counts_the_distinct_slides_of_each_layout(wsi_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "wsi"
    (root / "demo").mkdir(parents=True)
    shutil.copyfile(wsi_root / SLIDES[0], root / "demo" / SLIDES[0])
    shutil.copyfile(wsi_root / SLIDES[1], root / SLIDES[1].replace(".svs", ".tif"))
    items = make_items(4, [*SLIDES, "gone.svs"])  # a, b, gone, a: slide a counts once
    summary = asyncio.run(evaluate(items, root, random_provider(), tmp_path / "out"))
    assert summary.provenance.slide_layouts == {"group": 1, "other_extension": 1}
    on_disk = Summary.model_validate_json((tmp_path / "out" / "summary.json").read_text())
    assert on_disk.provenance.slide_layouts == {"group": 1, "other_extension": 1}
