"""provider=gemini through the job of `scripts/run_eval.py` (in-process, giant.evaluate) and the real
google-genai SDK against the loopback Gemini server: a T=20 paper-mode episode with every thought
signature sent back, its rerun answered by the ledger alone, and a wrong key stopping the run with the
one line and exit code the command line prints for it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from giant.data.demo import build_demo
from giant.errors import EXIT_SETUP
from tests.helpers.cli import Ended, Env, clean_env
from tests.llm.gemini_server import BAD_KEY, KEY, GeminiServer, serving

T = 20

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    paths = build_demo(tmp_path_factory.mktemp("demo"))
    return paths.csv_path, paths.wsi_root


def _run(tmp: Path, url: str, csv: Path, wsi_root: Path, *more: str, out: str = "outputs") -> Ended:
    env = clean_env("GEMINI_", GIANT_CACHE_DIR=str(tmp / "cache"), GEMINI_API_KEY=KEY)
    args = [
        "provider=gemini",
        f"provider.base_url={url}",
        f"dataset.csv_path={csv}",
        "dataset.benchmark=demo_shapes",
        f"dataset.wsi_root={wsi_root}",
        f"tracking.uri=sqlite:///{tmp / out / 'mlflow.db'}",
        *more,
    ]
    return Env(tmp, env).ended(tmp / out / "job", *args)


def _calls(out: Path) -> list[dict[str, object]]:
    """The calls of the run's one episode (its trajectory.json, also copied among the MLflow artifacts)."""
    (text,) = {path.read_text() for path in out.rglob("trajectory.json")}
    return list(json.loads(text)["calls"])


def test_a_paper_mode_episode_at_t20_then_its_replay(tmp_path: Path, demo: tuple[Path, Path]) -> None:
    csv, wsi_root = demo
    server = GeminiServer(answer_at=T)
    paper = ("agent=paper", f"agent.max_steps={T}", "limit=1")
    with serving(server) as url:
        first = _run(tmp_path, url, csv, wsi_root, *paper)
        sent = len(server.requests)
        again = _run(tmp_path, url, csv, wsi_root, *paper, "resume=false", out="again")  # afresh, same ledger
    assert first.code == 0, first
    assert again.code == 0, again
    calls = _calls(tmp_path / "outputs")
    assert len(calls) == T == sent and not [c for c in calls if c.get("error")]  # 0 failed calls
    assert server.rejected == []  # every later request carried the earlier signatures
    for n, body in enumerate(server.requests):
        signed = [
            p
            for c in body["contents"]
            if c["role"] == "model"
            for p in c["parts"]
            if p.get("thoughtSignature")
        ]
        assert len(signed) == n
    assert len(server.requests) == sent  # the replay sent 0 requests
    replayed = _calls(tmp_path / "again")
    assert len(replayed) == T and all(c["usage"]["calls_replayed"] == 1 for c in replayed)  # type: ignore[index]


def test_a_wrong_key_stops_the_run_naming_its_variable(
    tmp_path: Path, demo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    csv, wsi_root = demo
    server = GeminiServer(answer_at=2)
    server.fail = [BAD_KEY] * 20
    with serving(server) as url:
        end = _run(tmp_path, url, csv, wsi_root, "agent.max_steps=2", "concurrency=8")
    assert end.code == EXIT_SETUP, end
    assert len(server.requests) <= 2  # 8 items on 8 workers: the first call goes alone and stops the run
    line = end.line or ""
    assert line.startswith("run_eval: stopped at the first key error") and "$GEMINI_API_KEY" in line
    printed = capsys.readouterr()
    assert KEY not in line + printed.out + printed.err
