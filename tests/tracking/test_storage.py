"""Each image a model was sent is on disk once: the ledger's file, the trajectory folder's and the
MLflow artifact are one file (hard links), the page names the images instead of embedding them, and
everything an item-run stores stays within twice the JPEG bytes it sent."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from giant.agent.episode import run_episode
from giant.agent.modes import parse_agent
from giant.core import Item
from giant.eval.resume import carry_over
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.llm.ledger import Ledger
from giant.record import TRAJECTORIES_DIR, JobLayout, ResultRecord, ResultsWriter, trajectory_dir
from giant.record.trajectory import Trajectory
from giant.storage import link_or_copy
from giant.tracking.mlflow_logger import JobRun
from giant.tracking.viewer import write_html
from giant.wsi.synthetic import write_synthetic_slide
from tests.llm.mock_api import MockAPI, message, responses_body, step_json

ITEM = Item(
    benchmark="demo",
    benchmark_id="1",
    image_path="s.svs",
    prompt='Which?\n1. a\n2. b\n3. c\nAnswer as {"answer": N}.',
    options=("a", "b", "c"),
    truth=2,
    metric="accuracy",
)
CROPS = [(0, 0, 900, 900), (1500, 300, 700, 700), (2400, 1200, 600, 600), (600, 1000, 800, 800)]


@pytest.fixture(scope="module")
def slide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_synthetic_slide(tmp_path_factory.mktemp("slide") / "s.svs", 3000, 2000, seed=5)


def sdk_episode(slide: Path, out: Path, ledger: Ledger) -> Trajectory:
    """A navigation episode through the real OpenAI SDK (a scripted HTTP peer), its calls kept in
    `ledger` and its requests recorded, as a job runs it."""
    crops: list[dict[str, Any]] = [
        {"type": "crop", "x": x, "y": y, "width": w, "height": h} for x, y, w, h in CROPS
    ]
    answer: dict[str, Any] = {"type": "answer", "text": '<response>{"answer": 2}</response>'}
    api = MockAPI(*(responses_body(message(step_json(action))) for action in [*crops, answer]))

    async def go() -> Trajectory:
        provider = build_provider(
            provider_settings("openai", reasoning_effort=None), http_client=api.client(), ledger=ledger
        )
        cfg = parse_agent({"mode": "giant", "max_steps": len(CROPS) + 1, "crop_size": 600})
        return await run_episode(ITEM, slide, provider, cfg, out_dir=out, record_requests=True, ledger=ledger)

    return asyncio.run(go())


def unique_bytes(*folders: Path) -> int:
    """Bytes on disk under `folders`, each file counted once however many names it has."""
    seen: dict[tuple[int, int], int] = {}
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file():
                stat = path.stat()
                seen[(stat.st_dev, stat.st_ino)] = stat.st_size
    return sum(seen.values())


def test_an_item_run_keeps_each_image_once(
    slide: Path, tmp_path: Path, mlflow_store: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-storage")
    uri, experiment_id = mlflow_store
    job_dir, ledger = tmp_path / "job", Ledger(tmp_path / "cache" / "ledger")
    folder = JobLayout(job_dir).trajectory(ITEM.key, 0)
    traj = sdk_episode(slide, folder, ledger)
    assert traj.status == "answered" and traj.totals.crops == len(CROPS)

    client = MlflowClient(uri)
    run_id = client.create_run(experiment_id).info.run_id
    page = write_html(folder, mlflow_run_id=run_id)
    job = JobRun(client, run_id, settings=None)  # type: ignore[arg-type]  # logging needs no settings
    job.log_artifacts({}, {TRAJECTORIES_DIR: job_dir / TRAJECTORIES_DIR})
    artifacts = Path(client.get_run(run_id).info.artifact_uri.removeprefix("file://"))
    logged = artifacts / trajectory_dir(ITEM.key, 0)

    images = {region.image for region in traj.regions}
    assert len(images) == len(CROPS) + 1
    for name in images:  # one file: the ledger's, the trajectory folder's and MLflow's
        assert os.path.samefile(folder / name, ledger.image_path(name.removesuffix(".jpg")))
        assert os.path.samefile(folder / name, logged / name)

    # the page names its images and says where MLflow keeps them; requests.jsonl holds hashes only
    text = page.read_text(encoding="utf-8")
    assert f'data-mlflow-run="{run_id}"' in text
    assert f'data-artifact-dir="{trajectory_dir(ITEM.key, 0)}"' in text
    assert set(re.findall(r'<img src="([^"]+)"', text)) == images - {traj.regions[0].image}
    requests = (folder / "requests.jsonl").read_text(encoding="utf-8")
    assert set(re.findall(r"sha256=([0-9a-f]{64})", requests)) == {n.removesuffix(".jpg") for n in images}
    assert "base64" not in requests and "base64" not in text

    jpeg = sum((folder / name).stat().st_size for name in images)
    stored = unique_bytes(job_dir, ledger.root, artifacts)
    assert stored <= 2 * jpeg, f"{stored} bytes stored for {jpeg} JPEG bytes sent"

    # a page rewritten in the job folder never writes through into the logged copy
    before = (logged / page.name).read_bytes()
    write_html(folder, truth="3", correct=False, mlflow_run_id=run_id)
    assert (logged / page.name).read_bytes() == before and page.read_bytes() != before


def test_a_resumed_job_links_the_images_it_carries_over(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    rel = trajectory_dir(ITEM.key, 0)
    image = "a" * 64 + ".jpg"
    (old / rel).mkdir(parents=True)
    (old / rel / image).write_bytes(b"\xff\xd8jpeg")
    (old / rel / "trajectory.json").write_text("{}")
    record = ResultRecord(
        key=ITEM.key, benchmark="demo", run_index=0, seed=0, truth=2, status="answered", trajectory=rel
    )
    with ResultsWriter(JobLayout(old).results) as writer:
        writer.append(record)
    kept = carry_over(old, new, {(ITEM.key, 0)}, retry_failed=False).kept
    assert list(kept) == [(ITEM.key, 0)]
    assert os.path.samefile(old / rel / image, new / rel / image)  # the image: linked
    assert not os.path.samefile(old / rel / "trajectory.json", new / rel / "trajectory.json")  # text: copied


def test_link_or_copy_replaces_without_writing_through(tmp_path: Path) -> None:
    first, second, target = tmp_path / "first.jpg", tmp_path / "second.jpg", tmp_path / "out" / "t.jpg"
    first.write_bytes(b"first")
    second.write_bytes(b"second")
    assert link_or_copy(first, target) and os.path.samefile(first, target)
    assert link_or_copy(second, target) and target.read_bytes() == b"second"
    assert first.read_bytes() == b"first"  # the older link was replaced, its file left alone
    assert [p.name for p in target.parent.iterdir()] == ["t.jpg"]  # no temporary file left


def test_link_or_copy_copies_across_filesystems(tmp_path: Path) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("no second filesystem (/dev/shm) to link across")
    source = tmp_path / "image.jpg"
    source.write_bytes(b"jpeg bytes")
    target = shm / f"giant-test-{os.getpid()}" / "image.jpg"
    try:
        assert link_or_copy(source, target) is False  # EXDEV: copied instead
        assert target.read_bytes() == b"jpeg bytes"
    finally:
        target.unlink(missing_ok=True)
        target.parent.rmdir()
