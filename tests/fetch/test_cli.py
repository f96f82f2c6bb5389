"""scripts/fetch_slides.py as a real subprocess (real Hydra, real HTTP to the loopback stub)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from giant.config import CONF_DIR
from giant.fetch_job import FetchOptions
from giant.wsi.slide import Slide
from tests.fetch.conftest import GTEX_ID, SLIDE_A, SLIDE_B, SLIDE_GTEX, UUID_A, UUID_B, item, write_csv
from tests.fetch.stub import Stub

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fetch_slides.py"
MISSING_UUID = "11111111-2222-3333-4444-555555555555"


def run_fetch(*overrides: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIANT_", "MLFLOW_"))}
    env["GIANT_OUTPUT_DIR"] = str(tmp / "outputs")
    return subprocess.run(
        [sys.executable, str(SCRIPT), *overrides],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp,
        env=env,
    )


@pytest.fixture
def csv_path(tmp_path: Path) -> Path:
    items = [
        item("tcga", 1, SLIDE_A, UUID_A),
        item("tcga", 2, SLIDE_B, UUID_B),
        item("tcga", 9, "TCGA-ZZ-0000-01Z-00-DX1.svs", MISSING_UUID),
        item("tcga_expert_vqa", 1, SLIDE_A, UUID_A),
        item("gtex", 1, SLIDE_GTEX, GTEX_ID),
    ]
    return write_csv(tmp_path / "MultiPathQA.csv", items)


def test_fetch_yaml_composes_with_every_dataset_option() -> None:
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        for dataset in ("tcga", "gtex", "panda", "tcga_slidebench", "tcga_expert_vqa", "demo"):
            cfg = compose("fetch", overrides=[f"dataset={dataset}"])
            assert cfg.dataset.name == dataset and cfg.dry_run is False
            options = FetchOptions.model_validate(
                {"fetch": cfg.fetch, "check": cfg.check, "annotations": cfg.annotations}
            )
            assert options.fetch.concurrency == 4 and options.fetch.gdc_url == "https://api.gdc.cancer.gov"


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_dry_run_then_fetch_then_check(stub: Stub, csv_path: Path, tmp_path: Path) -> None:
    root = tmp_path / "wsi"
    common = [
        "dataset=tcga",
        "dataset.benchmark=null",
        f"dataset.csv_path={csv_path}",
        f"paths.wsi_root={root}",
        f"fetch.gdc_url={stub.gdc_url}",
        f"fetch.gtex_url={stub.gtex_url}",
        "fetch.backoff_s=0.01",
        "item_ids=[tcga/1,tcga/2,tcga_expert_vqa/1,gtex/1]",
    ]
    dry = run_fetch(*common, "dry_run=true", tmp=tmp_path)
    assert dry.returncode == 0, dry.stderr
    size = sum(p.stat().st_size for p in stub.gdc.values())
    assert f"| tcga | 2 | 0 | 2 | {size / 1000:.1f} KB | 0 |" in dry.stdout
    assert "| gtex | 1 | 0 | 1 | ~300.0 MB | 0 |" in dry.stdout and "estimate" in dry.stdout
    assert not [r for r in stub.requests if "/data/" in r.path or r.path.startswith("/gtex")]
    assert not root.exists()

    done = run_fetch(*common, tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "| all (distinct slides) | 3 | 3 | 0 | 0 |" in done.stdout
    assert len(stub.data_requests(f"/gdc/data/{UUID_A}")) == 1  # tcga and tcga_expert_vqa share it
    for name in (SLIDE_A, SLIDE_B, SLIDE_GTEX):
        with Slide.open(root / name) as slide:
            assert slide.level_count >= 2

    again = run_fetch(*common, tmp=tmp_path)
    assert again.returncode == 0 and "| all (distinct slides) | 3 | 0 | 3 | 0 |" in again.stdout

    checked = run_fetch(*common, "check=true", tmp=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    (root / SLIDE_B).unlink()
    missing = run_fetch(*common, "check=true", tmp=tmp_path)
    assert missing.returncode == 1 and SLIDE_B in missing.stdout
    # every row of the check is kept beside the run as JSON, whatever the screen cut short
    saved = sorted((tmp_path / "outputs").rglob("slide_check.json"))
    assert len(saved) == 2
    rows = json.loads(saved[-1].read_text())["slides"]
    assert sorted(row["status"] for row in rows) == ["missing", "present", "present"]


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_a_slide_that_cannot_be_fetched_exits_1_naming_it(stub: Stub, csv_path: Path, tmp_path: Path) -> None:
    proc = run_fetch(
        "dataset=tcga",
        f"dataset.csv_path={csv_path}",
        f"paths.wsi_root={tmp_path / 'wsi'}",
        f"fetch.gdc_url={stub.gdc_url}",
        "item_ids=[tcga/9]",
        tmp=tmp_path,
    )
    assert proc.returncode == 1
    assert (
        f"TCGA-ZZ-0000-01Z-00-DX1.svs: GDC metadata: HTTP 404 from {stub.gdc_url}/files/{MISSING_UUID}"
        in proc.stdout
    )
    assert [r.path for r in stub.requests] == [f"/gdc/files/{MISSING_UUID}"]


@pytest.mark.subprocess_job
@pytest.mark.slow
@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "fetch.concurrency=0",
            "fetch_slides: fetch.concurrency=0: Input should be greater than or equal to 1",
        ),
        (
            "fetch.gdc_ur=http://x",
            "fetch_slides: unknown key 'fetch.gdc_ur': no such setting; did you mean fetch.gdc_url?",
        ),
        ("dataset=tcgaa", "fetch_slides: unknown dataset 'tcgaa'"),
    ],
)
def test_bad_config_is_one_line_and_exit_2(tmp_path: Path, override: str, message: str) -> None:
    proc = run_fetch("dataset=tcga", override, tmp=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith(message) and len(proc.stderr.strip().splitlines()) == 1
