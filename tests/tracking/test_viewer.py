"""The trajectory page for an episode run by the real agent (scripted provider, real synthetic SVS),
and for hand-built edge cases (errors, missing images, hostile model text)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from markupsafe import escape

from giant.agent.episode import run_episode
from giant.agent.modes import parse_agent
from giant.core import Box, Item
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.llm.types import AnswerAction, Step, Usage
from giant.record import ResultRecord, ResultsWriter, trajectory_dir
from giant.record.trajectory import Call, Region, Trajectory
from giant.tracking.viewer import MLFLOW_IMAGES, render_html, write_html, write_job_pages
from tests.helpers.episodes import HOSTILE, scripted_episode

REPO = Path(__file__).resolve().parents[2]


def test_page_of_a_real_episode(slide: Path, tmp_path: Path) -> None:
    out = tmp_path / "traj"
    traj = scripted_episode(slide, out, tmp_path)
    assert traj.status == "answered" and len(traj.regions) == 3
    page = write_html(out, truth="2", correct=True).read_text()

    # Every JPEG is named, not embedded: the page refers to the file beside it (the overview once in
    # the SVG, each crop once under its call), each a real file whose bytes hash to its name.
    names = [n for n in re.findall(r'(?:src|href)="([^"]+)"', page) if not n.startswith("data:")]
    assert len(names) == 3 and set(names) == {r.image for r in traj.regions}
    for name in names:
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() + ".jpg" == name
    assert "base64" not in page and not re.search(r'<link(?![^>]*href="data:)', page)
    assert len(page) < sum((out / name).stat().st_size for name in names) / 4  # the page is text only

    # Both crop boxes drawn on the overview at the overview's scale, numbered 1 and 2.
    overview = traj.regions[0]
    sx, sy = overview.output_width / traj.slide_width, overview.output_height / traj.slide_height
    rects = re.findall(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"', page)
    expected = [
        v for r in traj.regions[1:] for v in (r.read.x * sx, r.read.y * sy, r.read.w * sx, r.read.h * sy)
    ]
    assert [float(v) for rect in rects for v in rect] == pytest.approx(expected, abs=0.06)
    assert re.findall(r'paint-order="stroke">(\d+)</text>', page) == ["1", "2"]
    assert traj.regions[2].clamped and "clamped to the slide" in page

    # Model text is escaped everywhere (the one script is the page's own); verdict and truth are shown.
    assert page.count("<script>") == 1 and f"<script>{MLFLOW_IMAGES}</script>" in page
    assert page.count(escape(HOSTILE)) == 3  # as Jinja2's autoescape writes it
    assert '<span class="ok">correct</span>' in page and "answered" in page


def hand_built(tmp_path: Path) -> Trajectory:
    from PIL import Image

    image = tmp_path / "ov.jpg"
    Image.new("RGB", (400, 200), "white").save(image)
    name = hashlib.sha256(image.read_bytes()).hexdigest() + ".jpg"
    image.rename(tmp_path / name)
    full = Box(x=0, y=0, w=4000, h=2000)
    return Trajectory(
        item_key="tcga/7",
        mode="giant",
        max_steps=3,
        crop_size=400,
        slide_width=4000,
        slide_height=2000,
        regions=[
            Region(
                call_index=0,
                requested=full,
                read=full,
                level=2,
                output_width=400,
                output_height=200,
                image=name,
            ),
            Region(
                call_index=1,
                requested=Box(x=1000, y=500, w=400, h=400),
                read=Box(x=1000, y=500, w=400, h=400),
                level=0,
                output_width=400,
                output_height=400,
                image="0" * 64 + ".jpg",
            ),
        ],
        calls=[
            Call(index=1, steps=[]),
            Call(
                index=2,
                error_kind="parse",
                error=f"bad json {HOSTILE}",
                raw_text="{oops</b>",
                feedback="Reply with one JSON object",
                usage=Usage(input_tokens=10, cost_usd=None),
            ),
            Call(
                index=3,
                steps=[Step(reasoning="r", action=AnswerAction(text="x"))],
                raw_text='{"reasoning": "r", "action": {"type": "answer", "text": "x"}} I hope this helps',
                decode_note="extra text after the JSON ignored (18 chars)",
            ),
        ],
        status="step_limit_exceeded",
        reason="no answer after 3 retries",
    )


def test_errors_feedback_and_missing_images(tmp_path: Path) -> None:
    page = render_html(hand_built(tmp_path), tmp_path)
    assert '<p class="error"><b>error (parse)</b>: bad json &lt;script&gt;' in page
    assert "{oops&lt;/b&gt;" in page and "Reply with one JSON object" in page
    assert "image missing: " + "0" * 64 + ".jpg" in page  # the page still renders
    assert '<rect x="100.0" y="50.0" width="40.0" height="40.0"' in page  # 4000 px -> 400 px: 1/10
    assert "cost unknown" in page and '<span class="unknown">not scored</span>' in page
    assert "step_limit_exceeded" in page and "no answer after 3 retries" in page
    # a reply used after passing over chatter shows the note and the whole reply
    assert "<b>reply decoded</b>: extra text after the JSON ignored (18 chars)" in page
    assert "I hope this helps" in page


def test_patch_answers_are_shown_per_patch(tmp_path: Path) -> None:
    traj = hand_built(tmp_path).model_copy(
        update={
            "mode": "patch",
            "patch_answers": ['{"answer": 3}', None, f"<b>{HOSTILE}"],
            "status": "answered",
        }
    )
    page = render_html(traj, tmp_path, label="3 (patch_vote)")
    assert escape('patch 1: {"answer": 3}\npatch 2: (no answer)\npatch 3: <b>') in page


def test_job_pages_take_truth_and_verdict_from_the_jobs_results(tmp_path: Path) -> None:
    folder = tmp_path / trajectory_dir("tcga/7", 0)
    folder.mkdir(parents=True)
    traj = hand_built(folder)
    (folder / "trajectory.json").write_text(traj.model_dump_json())
    with ResultsWriter(tmp_path / "results.jsonl") as writer:
        writer.append(
            ResultRecord(
                key=traj.item_key,
                benchmark="tcga",
                run_index=0,
                seed=0,
                truth=17,
                status="answered",
                label=4,
                method="response_json",
                correct=False,
                trajectory=trajectory_dir(traj.item_key, 0),
            )
        )
    write_job_pages(tmp_path)
    page = (folder / "trajectory.html").read_text()
    assert "<td>truth</td><td>17</td>" in page and '<span class="bad">incorrect</span>' in page
    assert "<td>answer read as</td><td>4 (response_json)</td>" in page


def test_view_trajectory_cli(tmp_path: Path) -> None:
    traj = hand_built(tmp_path)
    (tmp_path / "trajectory.json").write_text(traj.model_dump_json())
    script = str(REPO / "scripts" / "view_trajectory.py")
    ok = subprocess.run(
        [sys.executable, script, str(tmp_path / "trajectory.json"), "--truth", "3", "--incorrect"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == str(tmp_path / "trajectory.html")
    assert '<span class="bad">incorrect</span>' in (tmp_path / "trajectory.html").read_text()
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = subprocess.run([sys.executable, script, str(empty)], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "no trajectory.json" in bad.stderr


def test_regions_sent_with_the_overview_are_numbered(slide: Path, tmp_path: Path) -> None:
    """random_regions mode reads its regions before the first call (call_index 0): they are crops
    too, drawn on the overview and shown before the calls."""
    script = tmp_path / "answer.jsonl"
    script.write_text(
        json.dumps({"reasoning": "r", "action": {"type": "answer", "text": '{"answer": 1}'}}) + "\n"
    )
    provider = build_provider(provider_settings("scripted", script=str(script)))
    item = Item(
        benchmark="demo",
        benchmark_id="2",
        image_path="s.svs",
        prompt="Which?",
        options=("a", "b"),
        truth=1,
        metric="accuracy",
    )
    cfg = parse_agent(
        {
            "mode": "random_regions",
            "max_steps": 4,
            "crop_size": 500,
            "region_min_side": 400,
            "region_min_tissue": 0,
        }
    )
    out = tmp_path / "rr"
    traj = asyncio.run(run_episode(item, slide, provider, cfg, out_dir=out, seed=1))
    extra = [r for r in traj.regions[1:] if r.call_index == 0]
    assert traj.status == "answered" and extra
    page = write_html(out).read_text()
    numbers = [str(n) for n in range(1, len(traj.regions))]
    assert re.findall(r'paint-order="stroke">(\d+)</text>', page) == numbers
    assert "Regions sent with the overview" in page
    assert re.findall(r'<img src="([^"]+)"', page) == [r.image for r in traj.regions[1:]]
