"""PANDA's label masks through scripts/fetch_slides.py annotations=true (real Hydra, real HTTP to the
loopback stub of Kaggle's API): the dry run lists each slide's mask with its size from the
competition's (paged) file list and moves no byte; the fetch lands them whole, sends the user's
Kaggle credentials from the environment, and names the slide that has no mask instead of fetching it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tifffile

from giant.data.check import human_bytes
from giant.data.fetch.masks import MASK_FOLDER
from tests.fetch.conftest import item, write_csv
from tests.fetch.stub import Stub, StubServer
from tests.fetch.test_cli import run_fetch

IMAGE_IDS = (
    "0005f7aaab2800f6170c399693a96917",
    "000920ad0b612851f8e01bcc880d9b3d",
    "001d865e65ef5d2579c190a0e0350d8f",
)


@pytest.fixture
def kaggle(tmp_path: Path) -> Stub:
    """Masks of the first two slides (the third has none), plus other files of the competition."""
    remote = tmp_path / "remote"
    remote.mkdir()
    files = {}
    for n, image_id in enumerate(IMAGE_IDS[:2]):
        path = remote / f"{image_id}_mask.tiff"
        tifffile.imwrite(path, np.full((256 * (n + 1), 256, 3), n + 1, dtype=np.uint8), tile=(128, 128))
        files[f"{MASK_FOLDER}/{path.name}"] = path
    (remote / "train.csv").write_text("image_id,data_provider,isup_grade,gleason_score\n")
    files["train.csv"] = remote / "train.csv"
    return Stub(kaggle=files)


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_dry_run_lists_the_masks_with_their_sizes_then_the_fetch_lands_them(
    kaggle: Stub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = [item("panda", n, f"{image_id}.tiff", f"{image_id}.tiff") for n, image_id in enumerate(IMAGE_IDS)]
    csv_path = write_csv(tmp_path / "MultiPathQA.csv", items)
    masks = tmp_path / "masks"
    monkeypatch.setenv("KAGGLE_USERNAME", "giant-user")
    monkeypatch.setenv("KAGGLE_KEY", "not-a-real-key")
    with StubServer(kaggle) as stub:
        common = [
            "dataset=panda",
            f"dataset.csv_path={csv_path}",
            f"paths.wsi_root={tmp_path / 'wsi'}",
            f"dataset.annotations.path={masks}",
            f"fetch.kaggle_url={stub.kaggle_url}",
            "fetch.backoff_s=0.01",
            "annotations=true",
        ]
        dry = run_fetch(*common, "dry_run=true", tmp=tmp_path)
        size = sum(p.stat().st_size for name, p in stub.kaggle.items() if name.startswith(MASK_FOLDER))
        assert f"| panda | 3 | 0 | 2 | {human_bytes(size)} | 1 |" in dry.stdout, dry.stdout + dry.stderr
        assert f"{IMAGE_IDS[2]}_mask.tiff" in dry.stdout and "not annotated" in dry.stdout
        assert not [r for r in stub.requests if "/download/" in r.path] and not masks.exists()
        assert len([r for r in stub.requests if "/list/" in r.path]) == 2  # both pages of the list

        done = run_fetch(*common, tmp=tmp_path)
    assert done.returncode == 1  # one slide has no mask: said, not hidden
    for name, source in stub.kaggle.items():
        if name.startswith(MASK_FOLDER):
            assert (masks / Path(name).name).read_bytes() == source.read_bytes()
    assert not list(masks.glob("*.part")) and set(stub.kaggle_users) == {"giant-user"}
