"""PANDA slides through Kaggle: one line without the package or credentials; with a client object
(here a fake standing in for kaggle's KaggleApi) the file lands in place and opens."""

from __future__ import annotations

import zipfile
from pathlib import Path

import httpx2
import pytest

from giant.data.fetch.plan import build_plan
from giant.data.fetch.run import run_plan
from giant.data.fetch.settings import FetchSettings
from giant.data.fetch.sources import KAGGLE_COMPETITION, KaggleUnavailable, load_kaggle_client
from giant.wsi.slide import Slide
from tests.fetch.conftest import PANDA_ID, item

PANDA = item("panda", 1, PANDA_ID, PANDA_ID)


class FakeKaggle:
    """Writes the served slide where KaggleApi.competition_download_file would (optionally zipped)."""

    def __init__(self, slide: Path, *, zipped: bool = False) -> None:
        self.slide, self.zipped, self.calls = slide, zipped, list[tuple[str, str]]()

    def competition_download_file(
        self,
        competition: str,
        file_name: str,
        path: str | None = None,
        force: bool = False,
        quiet: bool = False,
    ) -> None:
        self.calls.append((competition, file_name))
        name = Path(file_name).name
        assert path is not None
        if self.zipped:
            with zipfile.ZipFile(Path(path) / f"{name}.zip", "w") as archive:
                archive.write(self.slide, name)
        else:
            (Path(path) / name).write_bytes(self.slide.read_bytes())


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("KAGGLE_USERNAME", "KAGGLE_KEY", "KAGGLE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)


def test_without_credentials_one_line_says_what_to_do(no_credentials: None) -> None:
    with pytest.raises(KaggleUnavailable) as caught:
        load_kaggle_client()
    message = str(caught.value)
    assert "\n" not in message
    for part in (
        "pip install -e '.[kaggle]'",
        "~/.kaggle/kaggle.json",
        "KAGGLE_USERNAME",
        "KAGGLE_KEY",
        "rules",
    ):
        assert part in message


def test_a_panda_fetch_without_credentials_prints_the_line_once_and_fails(
    no_credentials: None, settings: FetchSettings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = item("panda", 2, "0005f7aaab2800f6170c399693a96917.tiff", "0005f7aaab2800f6170c399693a96917.tiff")
    with httpx2.Client() as client:
        plan = build_plan([PANDA, other], tmp_path, client, settings)
        report = run_plan(plan, client, settings)
    lines = [line for line in capsys.readouterr().err.splitlines() if "kaggle" in line.lower()]
    assert len(lines) == 1 and lines[0].startswith("fetch_slides: PANDA slides come from Kaggle")
    assert not report.ok and {o.status for o in report.outcomes} == {"failed"}


@pytest.mark.parametrize("zipped", [False, True])
def test_a_kaggle_client_lands_the_slide_in_place(
    settings: FetchSettings, source_slides: dict[str, Path], tmp_path: Path, zipped: bool
) -> None:
    fake = FakeKaggle(source_slides[PANDA_ID], zipped=zipped)
    with httpx2.Client() as client:
        plan = build_plan([PANDA], tmp_path, client, settings)
        assert "| panda | 1 | 0 | 1 | ~40.0 MB | 0 |" in plan.render()
        report = run_plan(plan, client, settings, kaggle=lambda: fake)
    assert report.ok, report.render()
    assert fake.calls == [(KAGGLE_COMPETITION, f"train_images/{PANDA_ID}")]
    with Slide.open(tmp_path / PANDA_ID) as slide:
        assert slide.level_count >= 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [PANDA_ID]  # no temporary folder left
