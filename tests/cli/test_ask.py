"""scripts/ask.py as a real subprocess (real Hydra, real agent, real OpenSlide on a generated slide)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from giant.wsi.synthetic import write_synthetic_slide

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "ask.py"


@pytest.fixture(scope="module")
def slide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_synthetic_slide(tmp_path_factory.mktemp("slide") / "organ.svs", 3000, 2000, seed=5)


def ask(*overrides: str, out: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIANT_", "MLFLOW_"))}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *overrides, f"hydra.run.dir={out}"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=out.parent,
        env=env,
    )


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_random_provider_answers_and_writes_the_trajectory(slide: Path, tmp_path: Path) -> None:
    out = tmp_path / "job"
    proc = ask(
        f"slide={slide}",
        "question=Which organ is this?",
        "options=[liver,lung,'kidney, left']",
        "agent.max_steps=4",
        "seed=7",
        out=out,
    )
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(": ", 1) for line in proc.stdout.splitlines())
    assert lines["status"] == "answered"
    traj = json.loads((out / "trajectory.json").read_text())
    assert {"status", "answer", "calls", "regions"} <= set(traj)
    assert lines["answer"] == traj["answer"] and traj["status"] == "answered"
    label = json.loads(traj["answer"])["answer"]
    assert lines["option"] == f"{label}. {['liver', 'lung', 'kidney, left'][label - 1]}"
    assert len(traj["calls"]) == 4 and all(call["steps"] for call in traj["calls"])
    assert lines["steps"] == f"{traj['totals']['steps']} (4 provider calls, {traj['totals']['crops']} crops)"
    assert lines["cost"] == "$0.0000" and lines["tokens"].startswith("input 0")
    assert "3. kidney, left" in traj["question"]
    for region in traj["regions"]:
        assert (out / region["image"]).is_file()
    page = (out / "trajectory.html").read_text()
    named = {name for name in re.findall(r'(?:src|href)="([^"]+)"', page) if (out / name).is_file()}
    assert named == {r["image"] for r in traj["regions"]}  # the page names the JPEGs beside it
    assert lines["page"] == str(out / "trajectory.html")
    assert f"<td>answer read as</td><td>{lines['option']}</td>" in page


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_each_call_records_its_action_or_error(slide: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text(
        '{"error": "parse", "message": "not JSON at all"}\n'
        '{"reasoning": "zoom", "action": {"type": "crop", "x": 100, "y": 100, "width": 800, "height": 600}}\n'
        '{"reasoning": "seen", "action": {"type": "answer", "text": "It is <b>lung</b> tissue"}}\n'
    )
    out = tmp_path / "job"
    proc = ask(
        f"slide={slide}", "question=What tissue?", "provider=scripted", f"provider.script={script}", out=out
    )
    assert proc.returncode == 0, proc.stderr
    traj = json.loads((out / "trajectory.json").read_text())
    calls = traj["calls"]
    assert [c["error_kind"] for c in calls] == ["parse", None, None]
    assert [s["action"]["type"] for c in calls[1:] for s in c["steps"]] == ["crop", "answer"]
    assert traj["answer"] == "It is <b>lung</b> tissue" and "answer: It is <b>lung</b> tissue" in proc.stdout
    assert "option:" not in proc.stdout  # a free-text question has no options to map to
    assert [r["call_index"] for r in traj["regions"]] == [0, 2]
    assert "It is &lt;b&gt;lung&lt;/b&gt; tissue" in (out / "trajectory.html").read_text()


@pytest.mark.subprocess_job
def test_unreadable_slide_exits_1_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "broken.svs"
    bad.write_bytes(b"not a slide at all")
    proc = ask(f"slide={bad}", "question=What tissue?", out=tmp_path / "job")
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("ask: ") and str(bad) in proc.stderr
    missing = ask(f"slide={tmp_path / 'absent.svs'}", "question=What tissue?", out=tmp_path / "job2")
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1 and "slide not found" in missing.stderr


@pytest.mark.subprocess_job
def test_missing_question_is_a_one_line_config_error(slide: Path, tmp_path: Path) -> None:
    proc = ask(f"slide={slide}", out=tmp_path / "job")
    assert proc.returncode == 2
    assert proc.stderr == 'ask: question is required: pass question="..." on the command line\n'
