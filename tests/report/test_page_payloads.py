"""Script payloads in every field of the three pages that carries model, dataset or CSV text, opened in
headless Chromium (tests/browser.py): nothing runs, no element or attribute of the payload reaches the
DOM, and each payload is there as text. The same pages rendered with autoescape off must run the
payload, so the checks are shown to catch what they are meant to catch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import pytest

from giant import pages
from giant.compare.pairs import compare_runs
from giant.compare.render import to_html
from giant.compare.sources import RunData, outcomes
from giant.core import Box
from giant.llm.types import AnswerAction, NoteAction, Step
from giant.record import ResultRecord, ResultsWriter
from giant.record.trajectory import Call, Region, Trajectory
from giant.report import write_report
from giant.tools.conch.tool import ConchAction, ConchRecord
from giant.tracking.viewer import write_html
from tests.browser import open_page, serve

SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=1">'


def hostile(field: str) -> str:
    """The payload tagged with its field, so a missing one names where it went."""
    return f"{field}:{SCRIPT}{IMG}"


TRAJECTORY_FIELDS = [
    *("item", "provider", "model", "slide", "question", "system_prompt", "reasoning", "note"),
    *("hypothesis", "answer_action", "decode_note", "raw", "feedback", "error"),
    *("tool_model", "tool_image", "notes", "reason", "answer", "truth", "label", "image"),
]
REPORT_FIELDS = [
    *("item", "task", "reason", "provider", "model", "error", "raw"),
    *("tool_model", "tool_image", "hypothesis"),
]
COMPARE_FIELDS = [
    *("task", "mode", "model_a", "model_b", "config_a", "config_b", "where_a", "where_b"),
    *("item0", "item1", "answer_a", "answer_b", "status", "question"),
]


def trajectory() -> Trajectory:
    box = Box(x=0, y=0, w=1000, h=1000)
    note = Step(reasoning=hostile("reasoning"), action=NoteAction(text=hostile("note")))

    def region(call_index: int, image: str) -> Region:
        return Region(
            call_index=call_index,
            requested=box,
            read=box,
            level=0,
            output_width=100,
            output_height=100,
            image=image,
        )

    return Trajectory(
        item_key=hostile("item"),
        mode="giant",
        max_steps=5,
        crop_size=500,
        provider=hostile("provider"),
        model=hostile("model"),
        slide_path=hostile("slide"),
        slide_width=1000,
        slide_height=1000,
        question=hostile("question"),
        system_prompt=hostile("system_prompt"),
        calls=[
            Call(index=1, steps=[note]),
            Call(
                index=2,
                steps=[Step(reasoning="r", action=ConchAction(hypotheses=[hostile("hypothesis")]))],
                decode_note=hostile("decode_note"),
                raw_text=hostile("raw"),
                feedback=hostile("feedback"),
            ),
            Call(index=3, steps=[Step(reasoning="r", action=AnswerAction(text=hostile("answer_action")))]),
            Call(index=4, error_kind="parse", error=hostile("error"), raw_text=hostile("raw")),
        ],
        regions=[region(0, "overview.jpg"), region(2, hostile("image"))],
        tool_calls=[
            ConchRecord(
                call_index=2,
                tool="conch",
                model=hostile("tool_model"),
                image=hostile("tool_image"),
                region=box,
                input_size=448,
                hypotheses=[hostile("hypothesis")],
                scores=[0.5],
            )
        ],
        notes=[hostile("notes")],
        answer=hostile("answer"),
        status="retries_exhausted",
        reason=hostile("reason"),
    )


def job(root: Path) -> Path:
    """A job folder of one failed item-run: its record, trajectory and trajectory page."""
    folder = root / "trajectories" / "item" / "run0"
    folder.mkdir(parents=True)
    traj = trajectory()
    (folder / "trajectory.json").write_text(traj.model_dump_json(), encoding="utf-8")
    write_html(folder, traj, truth=hostile("truth"), correct=False, label=hostile("label"))
    with ResultsWriter(root / "results.jsonl") as writer:
        writer.append(
            ResultRecord(
                key=hostile("item"),
                benchmark=hostile("task"),
                run_index=0,
                seed=0,
                truth=1,
                status="retries_exhausted",
                reason=hostile("reason"),
                trajectory="trajectories/item/run0",
            )
        )
    write_report(root)
    return root


def comparison_page(root: Path) -> Path:
    def run(letter: str, labels: list[int | None]) -> RunData:
        records = [
            ResultRecord(
                key=hostile(f"item{i}"),
                benchmark=hostile("task"),
                run_index=0,
                seed=0,
                prediction=hostile(f"answer_{letter}"),
                label=label,
                truth=1,
                correct=label == 1,
                status="answered" if label is not None else "provider_error",
            ).model_copy(  # a status is typed, so a hostile one only gets in unvalidated: still escaped
                update={} if label is not None else {"status": hostile("status")}
            )
            for i, label in enumerate(labels)
        ]
        config = {
            "agent": {"mode": hostile("mode"), "max_steps": 3},
            "provider": {"model": hostile(f"model_{letter}")},
            "custom": {"setting": hostile(f"config_{letter}")},
        }
        return RunData(
            where=hostile(f"where_{letter}"),
            task=hostile("task"),
            metric_name="accuracy",
            runs_per_item=1,
            tie_rule="lowest_run_index",
            config=config,
            items=outcomes(records, 1, "lowest_run_index"),
        )

    comparison = compare_runs([run("a", [1, None]), run("b", [None, 1])], replicates=20)
    pair = comparison.pairs[0]
    pair.flips[:] = [flip.model_copy(update={"question": hostile("question")}) for flip in pair.flips]
    root.mkdir(parents=True, exist_ok=True)
    (root / "comparison.html").write_text(to_html(comparison), encoding="utf-8")
    return root


def effects(browser: Any, folder: Path, name: str) -> dict[str, Any]:
    """What the page did with the payloads: whether one ran, the payload elements and attributes in
    the DOM (the page's own script is one), the DOM's text, and any script error."""
    with serve(folder) as base, open_page(browser, f"{base}/{name}") as opened:
        found = opened.page.evaluate(
            """() => ({
                pwned: window.__pwned === undefined ? null : window.__pwned,
                scripts: document.querySelectorAll("script").length,
                onerror: document.querySelectorAll("[onerror]").length,
                imgX: document.querySelectorAll('img[src="x"]').length,
                text: document.body.textContent,
            })"""
        )
        found["errors"] = [e for e in opened.errors if e.startswith("pageerror")]
        return found


@pytest.fixture
def written(tmp_path: Path) -> dict[str, tuple[Path, str, list[str]]]:
    report = job(tmp_path / "job")
    return {
        "report": (report, "report.html", REPORT_FIELDS),
        "trajectory": (report, "trajectories/item/run0/trajectory.html", TRAJECTORY_FIELDS),
        "comparison": (comparison_page(tmp_path / "compare"), "comparison.html", COMPARE_FIELDS),
    }


@pytest.mark.slow
@pytest.mark.parametrize("page", ["report", "trajectory", "comparison"])
def test_payloads_are_shown_never_run(browser: Any, written: dict[str, Any], page: str) -> None:
    folder, name, fields = written[page]
    found = effects(browser, folder, name)
    assert found["pwned"] is None
    assert (found["scripts"], found["onerror"], found["imgX"]) == (1, 0, 0)  # the page's own script
    assert [field for field in fields if hostile(field) not in found["text"]] == []  # shown as text
    assert found["errors"] == []


@pytest.fixture
def autoescape_off(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("giant", "templates"),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
    )
    monkeypatch.setattr(pages, "_ENV", env)
    yield


@pytest.mark.slow
@pytest.mark.parametrize("page", ["report", "trajectory", "comparison"])
def test_the_check_catches_pages_without_autoescape(
    browser: Any, autoescape_off: None, written: dict[str, Any], page: str
) -> None:
    """The negative control: the same pages with autoescape off run the payload."""
    folder, name, _ = written[page]
    found = effects(browser, folder, name)
    assert found["pwned"] == 1 and found["scripts"] > 1 and found["onerror"] > 0
