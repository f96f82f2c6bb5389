"""The fetcher's real HTTP client against the loopback stub: resume, restart, retries, verification."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from giant.core import Item
from giant.data.fetch.download import part_path
from giant.data.fetch.plan import build_plan
from giant.data.fetch.report import FetchReport
from giant.data.fetch.run import http_client, run_plan
from giant.data.fetch.settings import FetchSettings
from giant.wsi.slide import Slide
from tests.fetch.conftest import GTEX_ID, SLIDE_A, SLIDE_B, SLIDE_GTEX, UUID_A, UUID_B, item
from tests.fetch.stub import Stub

DATA_A = f"/gdc/data/{UUID_A}"


def fetch(items: list[Item], root: Path, settings: FetchSettings) -> FetchReport:
    with http_client(settings) as client:
        plan = build_plan(items, root, client, settings)
        return run_plan(plan, client, settings)


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def test_fresh_fetch_writes_verified_slides_that_openslide_reads(
    stub: Stub, settings: FetchSettings, source_slides: dict[str, Path], tmp_path: Path
) -> None:
    items = [
        item("tcga", 1, SLIDE_A, UUID_A),
        item("tcga", 2, SLIDE_B, UUID_B),
        item("gtex", 1, SLIDE_GTEX, GTEX_ID),
    ]
    report = fetch(items, tmp_path, settings)
    assert report.ok, report.render()
    assert [o.status for o in report.outcomes] == ["fetched"] * 3
    for name, source in ((SLIDE_A, UUID_A), (SLIDE_B, UUID_B), (SLIDE_GTEX, GTEX_ID)):
        assert md5(tmp_path / name) == md5(source_slides[source])
        assert not part_path(tmp_path / name).exists()
        with Slide.open(tmp_path / name) as slide:  # the .tiff name holds an SVS: content decides
            assert slide.level_count >= 2 and slide.width == 1024
    assert report.outcomes[0].bytes == source_slides[UUID_A].stat().st_size
    assert "| tcga | 2 | 2 | 0 | 0 |" in report.render()


def test_slides_shared_by_tasks_are_fetched_once(stub: Stub, settings: FetchSettings, tmp_path: Path) -> None:
    items = [item(task, 7, SLIDE_A, UUID_A) for task in ("tcga", "tcga_slidebench", "tcga_expert_vqa")]
    report = fetch(items, tmp_path, settings)
    assert report.ok
    assert len(stub.data_requests(DATA_A)) == 1
    assert len(report.outcomes) == 1 and report.outcomes[0].tasks == [
        "tcga",
        "tcga_slidebench",
        "tcga_expert_vqa",
    ]


def test_present_slides_are_not_fetched_again(stub: Stub, settings: FetchSettings, tmp_path: Path) -> None:
    items = [item("tcga", 1, SLIDE_A, UUID_A)]
    assert fetch(items, tmp_path, settings).ok
    again = fetch(items, tmp_path, settings)
    assert again.ok and [o.status for o in again.outcomes] == ["present"]
    assert len(stub.data_requests(DATA_A)) == 1


def test_a_part_file_resumes_with_a_range_request(
    stub: Stub, settings: FetchSettings, source_slides: dict[str, Path], tmp_path: Path
) -> None:
    whole = source_slides[UUID_A].read_bytes()
    half = len(whole) // 2
    part_path(tmp_path / SLIDE_A).write_bytes(whole[:half])
    assert fetch([item("tcga", 1, SLIDE_A, UUID_A)], tmp_path, settings).ok
    (request,) = stub.data_requests(DATA_A)
    assert request.range == f"bytes={half}-" and request.status == 206
    assert request.sent == len(whole) - half
    assert (tmp_path / SLIDE_A).read_bytes() == whole


def test_a_server_without_range_support_starts_over(
    stub: Stub, settings: FetchSettings, source_slides: dict[str, Path], tmp_path: Path
) -> None:
    stub.ranges = False
    whole = source_slides[UUID_A].read_bytes()
    part_path(tmp_path / SLIDE_A).write_bytes(b"x" * 1000)  # would corrupt the file if appended to
    assert fetch([item("tcga", 1, SLIDE_A, UUID_A)], tmp_path, settings).ok
    (request,) = stub.data_requests(DATA_A)
    assert request.range == "bytes=1000-" and request.status == 200 and request.sent == len(whole)
    assert (tmp_path / SLIDE_A).read_bytes() == whole


def test_server_errors_are_retried(stub: Stub, settings: FetchSettings, tmp_path: Path) -> None:
    stub.fail[DATA_A] = 2
    stub.fail[f"/gdc/files/{UUID_A}"] = 2
    assert fetch([item("tcga", 1, SLIDE_A, UUID_A)], tmp_path, settings).ok
    assert [r.status for r in stub.data_requests(DATA_A)] == [500, 500, 200]
    assert [r.status for r in stub.data_requests(f"/gdc/files/{UUID_A}")] == [500, 500, 200]


def test_server_errors_past_the_retries_are_reported(
    stub: Stub, settings: FetchSettings, tmp_path: Path
) -> None:
    stub.fail[DATA_A] = settings.retries + 1
    report = fetch([item("tcga", 1, SLIDE_A, UUID_A)], tmp_path, settings)
    assert not report.ok
    assert f"HTTP 500 from {stub.gdc_url}/data/{UUID_A}" in report.outcomes[0].reason
    assert len(stub.data_requests(DATA_A)) == settings.retries + 1
    assert not (tmp_path / SLIDE_A).exists()


def test_a_connection_dropped_mid_body_resumes_where_it_stopped(
    stub: Stub, settings: FetchSettings, source_slides: dict[str, Path], tmp_path: Path
) -> None:
    stub.drop[DATA_A] = 20_000
    assert fetch([item("tcga", 1, SLIDE_A, UUID_A)], tmp_path, settings).ok
    first, second = stub.data_requests(DATA_A)
    assert first.range is None and first.sent == 20_000
    assert second.range == "bytes=20000-" and second.status == 206
    assert md5(tmp_path / SLIDE_A) == md5(source_slides[UUID_A])


def test_a_wrong_md5_is_fetched_once_more_then_reported(
    stub: Stub, settings: FetchSettings, tmp_path: Path
) -> None:
    stub.md5[UUID_A] = "0" * 32
    report = fetch([item("tcga", 1, SLIDE_A, UUID_A), item("tcga", 2, SLIDE_B, UUID_B)], tmp_path, settings)
    assert not report.ok
    failed, fetched = report.outcomes
    assert failed.status == "failed" and "md5" in failed.reason and "expected " + "0" * 32 in failed.reason
    assert fetched.status == "fetched"
    assert [r.status for r in stub.data_requests(DATA_A)] == [200, 200]
    assert not (tmp_path / SLIDE_A).exists() and not part_path(tmp_path / SLIDE_A).exists()
    assert f"failed: {SLIDE_A}: " in report.render()


@pytest.mark.parametrize("source", ["gdc", "gtex"])
def test_a_404_names_the_slide_and_the_url(
    stub: Stub, settings: FetchSettings, tmp_path: Path, source: str
) -> None:
    if source == "gdc":
        target = item("tcga", 1, "TCGA-XX.svs", "00000000-0000-0000-0000-000000000000")
        url = f"{stub.gdc_url}/files/00000000-0000-0000-0000-000000000000"
    else:
        target = item("gtex", 1, "GTEX-NOPE-0001.tiff", "GTEX-NOPE-0001")
        url = f"{stub.gtex_url}/GTEX-NOPE-0001"
    report = fetch([target], tmp_path, settings)
    assert not report.ok
    line = report.render().splitlines()[-1]
    assert line.startswith(f"failed: {target.image_path}: ") and f"HTTP 404 from {url}" in line
