"""Every published number names its paper and version; the patch-design study's rows sit beside our
study cells and GIANT runs; a second version of a published row is data, not code."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from giant.tracking import published
from giant.tracking.tables.load import _other_row_settings
from giant.tracking.tables.rows import RunRecord, build_table
from giant.tracking.tables.versus_paper import comparison_markdown


def record(task: str, mean: float, mode: str, k: int = 1, **settings: object) -> RunRecord:
    return RunRecord(
        run_id=f"{task}-{mode}-{mean}",
        task=task,
        agent_mode=mode,
        model="gpt-5",
        runs_per_item=k,
        settings=settings,  # type: ignore[arg-type]
        mean=mean,
        std=0.02,
        ci_low=mean - 0.04,
        ci_high=mean + 0.04,
    )


GIANT = {"max_steps": 20, "crop_size": 1000}
JOINT = {"patch_count": 30, "patch_size": 1024, "inference": "joint", "patch_mpp": 2.0}


def test_every_published_row_names_its_paper_and_version() -> None:
    rows = published.published_rows()
    assert rows and all(row.source is not None and row.source.arxiv for row in rows)
    arxiv = {row.method: row.source.arxiv for row in rows if row.source}
    assert arxiv["GIANT x1 (T=20, S=1000)"] == "2511.19652v1"
    study = {row.method: row.cells for row in published.rows_of("patch_design")}
    assert {m: (c["tcga"].mean, c["gtex"].mean) for m, c in study.items()} == {
        "Patch design: independent patches (starting point)": (15.1, 38.1),
        "Patch design: balanced joint configuration": (39.5, 62.9),
        "Patch design: tuned per task": (43.9, 71.6),
    }
    assert all(row.source and row.source.arxiv == "2606.12407" for row in published.rows_of("patch_design"))


def test_the_study_sits_beside_our_cells_and_giant() -> None:
    table = build_table(
        [
            record("tcga", 0.33, "giant", **GIANT),
            record("tcga", 0.30, "giant", 5, **GIANT),
            record("gtex", 0.61, "giant", 5, **GIANT),
            record("tcga", 0.41, "patch", **JOINT),
            record("gtex", 0.64, "patch", **JOINT),
            record("tcga", 0.13, "patch", patch_count=30, patch_size=224),  # GIANT's patch baseline
            record("tcga", 0.20, "giant", max_steps=5, crop_size=1000),  # no published configuration
        ]
    )
    text = comparison_markdown(table)
    assert "| paper: GIANT x1 (T=20, S=1000) | gpt-5 | 32.3 ± 3.5 |" in text
    assert "| published in | GIANT v1, arXiv 2511.19652v1, Table 1 |" in text
    study = text[text.index("## Patch-design study") :]
    lines = study.splitlines()
    assert (
        lines[0]
        == "## Patch-design study (Weihrauch, Buckley, Lotter, Manrai) (arXiv 2606.12407) beside ours"
    )
    joint = next(line for line in lines if "joint" in line and line.startswith("| patch"))
    assert "2.00 µm/px (~5x)" in joint and "41.0 ± 2.0 [37.0, 45.0] | 64.0 ± 2.0 [60.0, 68.0] |" in joint
    assert any(
        line.startswith("| giant x5 (T=20, S=1000) | gpt-5 | 30.0 ± 2.0 [26.0, 34.0] | 61.0")
        for line in lines
    )
    assert "| paper: Patch design: balanced joint configuration | gpt-5 | 39.5 | 62.9 |" in lines
    assert "(T=5)" not in study  # our rows beside the study: its cells and published configurations only
    # the published table names the source of every row
    table_part = text[text.index("## Published Table 1") : text.index("## Patch-design study")]
    body = [line for line in table_part.splitlines() if line.startswith("| ") and "method" not in line]
    assert body and all("arXiv 2511.19652v1" in line or "arXiv 2606.12407" in line for line in body)


@pytest.fixture
def second_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """published.yaml with a GIANT v2 source and a v2 GIANT x1 row added: a data change only."""
    data = yaml.safe_load(published.PUBLISHED_FILE.read_text(encoding="utf-8"))
    data["sources"]["giant_v2"] = {
        "title": "GIANT v2",
        "arxiv": "2511.19652v2",
        "table": "Table 1",
        "model": "gpt-5",
    }
    data["rows"].append(
        {"method": "GIANT x1 (T=20, S=1000)", "source": "giant_v2", "cells": {"tcga": [34.0, 3.4]}}
    )
    path = tmp_path / "published.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    monkeypatch.setattr(published, "PUBLISHED_FILE", path)
    for cached in (published._load, published.sources, published.published_rows):
        cached.cache_clear()
    yield
    for cached in (published._load, published.sources, published.published_rows):
        cached.cache_clear()


def test_a_second_version_of_a_row_is_data(second_version: None) -> None:
    rows = published.published_rows_for("giant", 1, GIANT)
    assert [row.source.arxiv for row in rows if row.source] == ["2511.19652v1", "2511.19652v2"]
    text = comparison_markdown(build_table([record("tcga", 0.33, "giant", **GIANT)]))
    assert "| paper: GIANT x1 (T=20, S=1000) | gpt-5 | 32.3 ± 3.5 |" in text
    assert "| paper: GIANT x1 (T=20, S=1000) | gpt-5 | 34.0 ± 3.4 |" in text
    assert "| published in | GIANT v2, arXiv 2511.19652v2, Table 1 |" in text
    assert "| difference (points) |  | -1.0 |" in text  # 33.0 - 34.0, against v2


def test_the_study_settings_are_read_back_from_the_params() -> None:
    params = {"agent.inference": "joint", "agent.patch_mpp": "2.0", "agent.patch_count": "30"}
    assert _other_row_settings("patch", params, {"patch_count": 30}) == {
        "inference": "joint",
        "patch_mpp": 2.0,
    }
    assert _other_row_settings("patch", {"agent.patch_count": "30"}, {"patch_count": 30}) == {}
