"""Real slides served by a loopback stub of the GDC and GTEx endpoints, and the fetch settings of
conf/fetch.yaml pointed at it (short backoff so retries take milliseconds)."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from giant.config import CONF_DIR
from giant.core import Item
from giant.data.fetch.settings import FetchSettings
from giant.data.multipathqa import CSV_COLUMNS
from giant.wsi.synthetic import write_synthetic_slide
from tests.fetch.stub import Stub, StubServer

UUID_A = "30778552-b67c-4627-8080-1d8ec5bd4e5b"
UUID_B = "c325a311-7b80-470a-9993-6cebe209e0a0"
GTEX_ID = "GTEX-OIZH-0626"
PANDA_ID = "dbf7cc49ae2e9831448c3ca54ad92708.tiff"
SLIDE_A = "TCGA-02-0266-01Z-00-DX1.svs"
SLIDE_B = "TCGA-02-0266-01Z-00-DX2.svs"
SLIDE_GTEX = f"{GTEX_ID}.tiff"  # as in the CSV: the service sends SVS, OpenSlide reads the content


@pytest.fixture(scope="session")
def source_slides(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Small pyramidal SVS files (two levels) that the stub serves: a few hundred KB each."""
    folder = tmp_path_factory.mktemp("remote")
    return {
        name: write_synthetic_slide(folder / f"{name}.svs", 1024, 768, seed=seed)
        for seed, name in enumerate((UUID_A, UUID_B, GTEX_ID, PANDA_ID))
    }


@pytest.fixture
def stub(source_slides: dict[str, Path]) -> Iterator[Stub]:
    served = Stub(
        gdc={UUID_A: source_slides[UUID_A], UUID_B: source_slides[UUID_B]},
        gtex={GTEX_ID: source_slides[GTEX_ID]},
    )
    with StubServer(served) as running:
        yield running


@pytest.fixture
def settings(stub: Stub) -> FetchSettings:
    block = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "fetch.yaml").fetch)
    assert isinstance(block, dict)
    fast = {
        "gdc_url": stub.gdc_url,
        "gtex_url": stub.gtex_url,
        "backoff_s": 0.01,
        "backoff_min_s": 0.001,
        "timeout_s": 5.0,
    }
    return FetchSettings.model_validate({**block, **fast})


def item(benchmark: str, number: int, image_path: str, file_id: str) -> Item:
    return Item(
        benchmark=benchmark,
        benchmark_id=str(number),
        image_path=image_path,
        prompt="Which one?",
        options=("a", "b"),
        truth=1,
        metric="accuracy",
        file_id=file_id,
    )


def write_csv(path: Path, items: list[Item]) -> Path:
    """A MultiPathQA-format CSV of the given items (what dataset.csv_path reads)."""
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for it in items:
            writer.writerow(
                {
                    "benchmark_name": it.benchmark,
                    "benchmark_id": it.benchmark_id,
                    "image_path": it.image_path,
                    "answer": "1",
                    "options": str(list(it.options)),
                    "image_exists": "True",
                    "patch_exists": "True",
                    "is_valid": "True",
                    "metric_type": it.metric,
                    "file_id": it.file_id,
                    "prompt": it.prompt,
                }
            )
    return path
