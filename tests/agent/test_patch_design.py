"""The patch-design study's axes (arXiv 2606.12407) end to end: real SDKs against a loopback server
count the requests, a real pyramidal slide shows what patch_mpp reads."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hydra import compose, initialize_config_dir
from PIL import Image

from giant.agent.modes import mode_of
from giant.config import CONF_DIR, RunSettings
from giant.core import Item
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.wsi.synthetic import write_synthetic_slide
from tests.browser import loopback
from tests.llm.mock_api import message, messages_body, responses_body, step_json, tool_use

from .conftest import Recording, run

ANSWER = {"type": "answer", "text": '<report>tumour</report>\n<response>{"answer": 2}</response>'}


class Peer(BaseHTTPRequestHandler):
    """Answers every POST like OpenAI's Responses API or Anthropic's Messages API (by path) and keeps
    each request body."""

    bodies: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        if self.path.endswith("/messages"):
            reply = messages_body(
                tool_use("submit_step", {"reasoning": "seen", "action": ANSWER}, "toolu_1"),
                stop_reason="tool_use",
            )
        else:
            reply = responses_body(message(step_json(ANSWER)))
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def peer(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    bodies: ClassVar[list[dict[str, Any]]] = []
    handler = type("RecordingPeer", (Peer,), {"bodies": bodies})
    with loopback(handler) as url:
        yield url, bodies


def images(body: dict[str, Any]) -> list[Image.Image]:
    """Every image of a request body, decoded (Responses API input_image or Messages API image)."""
    found = []
    for msg in body.get("input", body.get("messages", [])):
        content = msg.get("content")
        for part in content if isinstance(content, list) else []:
            if part.get("type") == "input_image":
                data = part["image_url"].split(",", 1)[1]
            elif part.get("type") == "image":
                data = part["source"]["data"]
            else:
                continue
            found.append(Image.open(io.BytesIO(base64.b64decode(data))))
    return found


def texts(body: dict[str, Any]) -> str:
    out = []
    for msg in body.get("input", body.get("messages", [])):
        content = msg.get("content")
        for part in content if isinstance(content, list) else []:
            out.append(part.get("text", ""))
    return "\n".join(out)


def random_provider_for() -> Recording:
    return Recording(build_provider(provider_settings("random", seed=0)))


def sdk_provider(name: str, url: str) -> Any:
    base = f"{url}/v1" if name == "openai" else url
    return build_provider(provider_settings(name, base_url=base, max_retries=0))


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("count", [3, 5])
def test_joint_is_one_request_with_every_patch(
    peer: tuple[str, list[dict[str, Any]]], provider: str, count: int, item: Item, slide_path: Path
) -> None:
    url, bodies = peer
    traj = run(
        item,
        slide_path,
        sdk_provider(provider, url),
        mode="patch",
        inference="joint",
        patch_count=count,
        patch_size=256,
    )
    assert traj.status == "answered" and traj.answer is not None and traj.patch_answers is None
    assert len(bodies) == 1 and traj.totals.calls == 1
    sent = images(bodies[0])
    assert len(sent) == count and all(max(image.size) == 256 for image in sent)
    words = texts(bodies[0])
    assert f"Below are {count} numbered image patches" in words and "of one whole-slide image" in words
    assert all(f"Patch {n} of {count}:" in words for n in range(1, count + 1))
    assert traj.patches is not None and (traj.patches.requested, traj.patches.sent) == (count, count)
    assert [r.call_index for r in traj.regions] == [1] * count


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_vote_is_one_request_per_patch(
    peer: tuple[str, list[dict[str, Any]]], provider: str, item: Item, slide_path: Path
) -> None:
    url, bodies = peer
    traj = run(item, slide_path, sdk_provider(provider, url), mode="patch", patch_count=4, patch_size=256)
    assert traj.status == "answered" and len(traj.patch_answers or []) == 4
    assert len(bodies) == 4
    assert [len(images(body)) for body in bodies] == [1, 1, 1, 1]
    assert all(max(images(body)[0].size) == 256 for body in bodies)
    assert all("numbered image patches" not in texts(body) for body in bodies)


@pytest.fixture(scope="module")
def pyramid(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real pyramidal SVS whose level 0 is 0.25 µm/px (40x)."""
    return write_synthetic_slide(tmp_path_factory.mktemp("pyr") / "pyr.svs", 9000, 7000, seed=5, mpp=0.25)


def test_patch_mpp_reads_a_box_8x_wider(item: Item, pyramid: Path) -> None:
    level0 = run(item, pyramid, random_provider_for(), mode="patch", patch_count=3, patch_size=224)
    coarse = run(
        item, pyramid, random_provider_for(), mode="patch", patch_count=3, patch_size=224, patch_mpp=2.0
    )
    assert coarse.status == level0.status == "answered"
    for near, far in zip(level0.regions, coarse.regions, strict=True):
        assert (near.read.w, near.read.h) == (224, 224) and near.level == 0
        assert (far.read.w, far.read.h) == (8 * 224, 8 * 224)  # 64x the area
        assert (far.read.w * far.read.h) / (near.read.w * near.read.h) == 64
        assert (far.output_width, far.output_height) == (224, 224)
        assert far.level > 0  # read at a coarser level of the pyramid, then resampled
        assert near.mpp == pytest.approx(0.25) and far.mpp == pytest.approx(2.0)
    assert coarse.patches is not None and coarse.patches.level0_side == 1792


def test_a_slide_without_mpp_fails_its_item_with_one_line(tmp_path: Path, item: Item, pyramid: Path) -> None:
    blind = tmp_path / "blind.svs"
    blind.write_bytes(pyramid.read_bytes().replace(b"|MPP = ", b"|XPP = "))
    traj = run(item, blind, random_provider_for(), mode="patch", patch_count=2, patch_mpp=2.0)
    assert traj.status == "slide_error" and traj.totals.calls == 0
    assert str(blind) in traj.reason and "agent.patch_mpp=2" in traj.reason and "\n" not in traj.reason
    # level 0 needs no mpp
    assert run(item, blind, random_provider_for(), mode="patch", patch_count=2).status == "answered"


def test_distinct_placement_sends_what_fits_and_records_it(item: Item, pyramid: Path) -> None:
    traj = run(
        item,
        pyramid,
        random_provider_for(),
        mode="patch",
        patch_count=30,
        patch_size=512,
        patch_mpp=2.0,
        patch_placement="distinct",
    )
    assert traj.patches is not None and traj.patches.requested == 30
    assert 0 < traj.patches.sent < 30 and len(traj.regions) == traj.patches.sent == traj.totals.calls
    boxes = [r.read for r in traj.regions]
    assert all(
        a.right <= b.x or b.right <= a.x or a.bottom <= b.y or b.bottom <= a.y
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
    )
    assert traj.patches.map is not None and traj.patches.map.mpp is not None


def test_the_study_settings_are_recorded_only_away_from_today() -> None:
    """agent=patch as shipped records and hashes as before the study (its pinned hash is in
    tests/config/test_roles.py); each study setting away from today's value is recorded, hashed and
    named in the run."""
    base = ["agent=patch", "provider=openai", "dataset=tcga", "skip_missing=true", "dry_run=true"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        today = RunSettings.from_config(compose("config", overrides=base))
        cells = {
            change: RunSettings.from_config(compose("config", overrides=[*base, change]))
            for change in ("agent.inference=joint", "agent.patch_mpp=2.0", "agent.patch_placement=distinct")
        }
    recorded = today.record()["agent"]
    assert not {"inference", "patch_mpp", "patch_placement"} & set(recorded)
    assert today.agent.model_dump()["inference"] == "vote"  # the settings model itself keeps every value
    assert mode_of(today.agent).run_name(today.agent, "tcga") == "tcga-patch-30x224"
    hashes = {today.config_hash(), *(cell.config_hash() for cell in cells.values())}
    assert len(hashes) == 4
    joint = cells["agent.inference=joint"]
    assert joint.record()["agent"]["inference"] == "joint"
    assert mode_of(joint.agent).run_name(joint.agent, "tcga") == "tcga-patch-30x224-joint"
    assert cells["agent.patch_mpp=2.0"].record()["agent"]["patch_mpp"] == 2.0


def test_the_dry_run_lists_slides_without_mpp_and_prices_a_joint_call(
    tmp_path: Path, item: Item, pyramid: Path
) -> None:
    from giant.agent.modes import parse_agent
    from giant.eval.dryrun import dry_run
    from giant.llm.pricing import Pricing, Rates

    root = tmp_path / "wsi"
    root.mkdir()
    (root / "seen.svs").write_bytes(pyramid.read_bytes())
    (root / "blind.svs").write_bytes(pyramid.read_bytes().replace(b"|MPP = ", b"|XPP = "))
    items = [
        item.model_copy(update={"benchmark_id": str(n), "image_path": name})
        for n, name in enumerate(["seen.svs", "blind.svs"])
    ]
    pricing = Pricing({"gpt-5": Rates(input=1.25, cached_input=0.125, cache_write=0.0, output=10.0)})
    report = dry_run(
        items,
        wsi_root=root,
        agent=parse_agent({"mode": "patch", "inference": "joint", "patch_count": 12, "patch_mpp": 2.0}),
        provider=provider_settings("openai", model="gpt-5"),
        pricing=pricing,
        runs_per_item=1,
        cell="tcga-patch-12x224-2mpp-joint",
    )
    assert [p.key for p in report.no_mpp] == [items[1].key]
    assert "blind.svs" in report.no_mpp[0].reason and "agent.patch_mpp=2.0" in report.no_mpp[0].reason
    est = report.estimate
    assert (est.images_per_call, est.calls_per_item_run, est.image_side) == (12, 1, 224)
    assert est.input_tokens >= 2 * 12 * est.tokens_per_image and report.warnings == []
    text = report.render()
    assert (
        f"no mpp {items[1].key}" in text
        and "cell tcga-patch-12x224-2mpp-joint: 12 image(s) of 224 px" in text
    )
