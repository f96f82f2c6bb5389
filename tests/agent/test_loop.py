"""The navigation loop with the scripted provider on a real generated slide (paper_facts §13 test plan)."""

from __future__ import annotations

import json
from pathlib import Path

from giant.agent import instructions
from giant.core import Item
from giant.llm.types import ImagePart
from giant.record.trajectory import Trajectory

from .conftest import HEIGHT, WIDTH, answer, crop, error, note, run, scripted, texts


def test_happy_path_crop_crop_answer(tmp_path: Path, item: Item, slide_path: Path) -> None:
    provider = scripted(tmp_path, [crop(0, 0, 2000, 2000), crop(1000, 1000, 500, 400), answer(3)])
    out = tmp_path / "out"
    traj = run(item, slide_path, provider, out, max_steps=5)
    assert traj.status == "answered"
    assert traj.answer == '{"answer": 3}'  # the task part, taken from <response>
    assert [len(c.steps) for c in traj.calls] == [1, 1, 1]
    assert (traj.totals.calls, traj.totals.steps, traj.totals.crops) == (3, 3, 2)
    assert [r.call_index for r in traj.regions] == [0, 1, 2]
    assert traj.regions[2].read.as_tuple() == (1000, 1000, 500, 400)
    assert (traj.slide_width, traj.slide_height) == (WIDTH, HEIGHT)
    saved = Trajectory.model_validate_json((out / "trajectory.json").read_text())
    assert saved == traj
    for region in traj.regions:
        assert (out / region.image).stat().st_size > 0
    # the crop's text states the region, the slide size and the steps left
    told = texts(provider.sent[2][0])
    assert f"region {traj.regions[1].read} of the {WIDTH} x {HEIGHT} slide" in told
    assert "You have 4 steps left" in told and "You have 3 steps left" in told


def test_early_answer_accepted_in_giant_mode(tmp_path: Path, item: Item, slide_path: Path) -> None:
    traj = run(item, slide_path, scripted(tmp_path, [answer(1)]), max_steps=5)
    assert (traj.status, traj.answer, traj.totals.calls, traj.totals.crops) == (
        "answered",
        '{"answer": 1}',
        1,
        0,
    )


def test_loop_limit_forces_the_answer(tmp_path: Path, item: Item, slide_path: Path) -> None:
    lines = [crop(0, 0, 1000, 1000), crop(100, 100, 900, 900), crop(0, 0, 500, 500), answer(4)]
    provider = scripted(tmp_path, lines)
    traj = run(item, slide_path, provider, max_steps=3)
    assert traj.status == "answered" and traj.answer == '{"answer": 4}'
    assert [ctx.must_answer for _, ctx in provider.sent] == [False, False, True, True]
    assert traj.totals.crops == 2  # the crop at step T was not executed
    assert traj.calls[2].feedback == instructions.STEP_LIMIT_CORRECTIVE


def test_force_answer_lists_what_was_examined(tmp_path: Path, item: Item, slide_path: Path) -> None:
    provider = scripted(tmp_path, [crop(0, 0, 2000, 1500), note("many glands"), answer(2)])
    traj = run(item, slide_path, provider, max_steps=3, note_tool=True)
    assert traj.status == "answered"
    final = provider.sent[2][0]
    told = texts(final)
    assert "You have examined:" in told and "the overview of the whole slide" in told
    assert f"crop 1 {traj.regions[1].read}" in told
    assert "- many glands" in told
    assert "Question: Which tissue is this?" in told
    assert provider.sent[2][1].must_answer and not provider.sent[1][1].must_answer


def test_an_action_the_run_does_not_offer_is_said_back_and_counted(
    tmp_path: Path, item: Item, slide_path: Path
) -> None:
    """A note without the note tool (or a tool not enabled) used to be parsed and skipped in
    silence: no reply, no correction, no failure counted."""
    provider = scripted(tmp_path, [note("glands"), crop(0, 0, 2000, 2000), answer(2)])
    traj = run(item, slide_path, provider, max_steps=5)
    assert traj.status == "answered" and traj.notes == []
    said = instructions.unavailable_action_text("note", [])
    assert traj.calls[0].feedback == said and said.startswith("Not executed: 'note'")
    assert said in texts(provider.sent[1][0])
    assert traj.totals.crops == 1

    failing = scripted(tmp_path, [note("a"), note("b"), note("c")])
    traj = run(item, slide_path, failing, max_steps=5)
    assert traj.status == "retries_exhausted" and "note is not offered" in traj.reason


def test_invalid_crop_is_clamped_by_default(tmp_path: Path, item: Item, slide_path: Path) -> None:
    provider = scripted(tmp_path, [crop(5000, 3000, 3000, 3000), crop(10, 10, 300, 300), answer()])
    traj = run(item, slide_path, provider, max_steps=5)
    assert traj.status == "answered"
    clamped = traj.regions[1]
    assert clamped.clamped and clamped.read.as_tuple() == (5000, 3000, 1000, 1000)
    assert clamped.requested.as_tuple() == (5000, 3000, 3000, 3000)
    assert "extends beyond the slide, so it was clamped" in texts(provider.sent[1][0])
    assert traj.totals.crops == 2


def test_strict_invalid_then_valid(tmp_path: Path, item: Item, slide_path: Path) -> None:
    provider = scripted(tmp_path, [crop(7000, 0, 100, 100), crop(10, 10, 300, 300), answer()])
    traj = run(item, slide_path, provider, max_steps=5, strict_crops=True)
    assert traj.status == "answered"
    assert traj.totals.crops == 1 and len(traj.regions) == 2
    feedback = traj.calls[0].feedback or ""
    assert "x=7000" in feedback and f"{WIDTH} x {HEIGHT}" in feedback and "not left of the slide" in feedback
    assert feedback in texts(provider.sent[1][0])


def test_strict_three_invalid_crops_fail_gracefully(tmp_path: Path, item: Item, slide_path: Path) -> None:
    provider = scripted(tmp_path, [crop(0, 0, 9000, 100)] * 5)
    out = tmp_path / "out"
    traj = run(item, slide_path, provider, out, max_steps=10, strict_crops=True, max_retries=3)
    assert traj.status == "retries_exhausted"
    assert traj.totals.calls == 3 and traj.totals.crops == 0
    assert traj.reason.count("invalid crop") == 3
    assert json.loads((out / "trajectory.json").read_text())["status"] == "retries_exhausted"


def test_bug_038_b7_recovered_crop_resets_the_counter(tmp_path: Path, item: Item, slide_path: Path) -> None:
    """Strict crops: invalid, valid, two transient errors, answer -> success in 5 calls."""
    lines = [
        crop(99000, 74000, 5000, 5000),
        crop(1000, 1000, 500, 500),
        error("transient"),
        error("transient"),
        answer(),
    ]
    traj = run(item, slide_path, scripted(tmp_path, lines), max_steps=5, max_retries=3, strict_crops=True)
    assert traj.status == "answered", traj.reason
    assert traj.totals.calls == 5
    assert [c.error_kind for c in traj.calls] == [None, None, "transient", "transient", None]


def test_three_transient_errors_in_a_row_fail(tmp_path: Path, item: Item, slide_path: Path) -> None:
    lines = [crop(1000, 1000, 500, 500), error("transient"), error("parse"), error("refusal"), answer()]
    traj = run(item, slide_path, scripted(tmp_path, lines), max_steps=5, max_retries=3)
    assert traj.status == "retries_exhausted"
    assert traj.totals.calls == 4
    assert "transient" in traj.reason and "parse" in traj.reason and "refusal" in traj.reason


def test_fatal_error_ends_with_provider_error(tmp_path: Path, item: Item, slide_path: Path) -> None:
    traj = run(item, slide_path, scripted(tmp_path, [crop(0, 0, 800, 800), error("fatal"), answer()]))
    assert traj.status == "provider_error"
    assert "fatal provider error at call 2" in traj.reason
    assert traj.totals.calls == 2 and traj.totals.crops == 1


def test_paper_mode_rejects_early_answer(tmp_path: Path, item: Item, slide_path: Path) -> None:
    lines = [answer(1), crop(0, 0, 1000, 1000), answer(1), crop(500, 500, 1000, 1000), answer(3)]
    provider = scripted(tmp_path, lines)
    traj = run(item, slide_path, provider, mode="paper", max_steps=3)
    assert traj.status == "answered" and traj.answer == '{"answer": 3}'
    assert traj.totals.calls == 5 and traj.totals.crops == 2  # exactly T-1 crops
    assert traj.calls[0].feedback == instructions.early_answer_corrective(0, 3)
    assert traj.calls[2].feedback == instructions.early_answer_corrective(1, 3)
    assert "exactly 2 regions" in (traj.system_prompt or "")
    # the same script in giant mode stops at the first answer
    giant = run(item, slide_path, scripted(tmp_path, lines), mode="giant", max_steps=3)
    assert (giant.totals.calls, giant.answer) == (1, '{"answer": 1}')


def test_paper_mode_success_has_exactly_t_minus_1_crops(tmp_path: Path, item: Item, slide_path: Path) -> None:
    lines = [crop(0, 0, 1000, 1000)] * 4 + [answer()]
    for t in (1, 2, 5):
        sub = tmp_path / str(t)
        sub.mkdir()
        traj = run(item, slide_path, scripted(sub, lines[5 - t :]), mode="paper", max_steps=t)
        assert traj.status == "answered"
        assert traj.totals.crops == t - 1 and traj.totals.calls == t


def test_t1_answers_from_the_overview(tmp_path: Path, item: Item, slide_path: Path) -> None:
    provider = scripted(tmp_path, [answer(2)])
    traj = run(item, slide_path, provider, max_steps=1)
    assert traj.status == "answered" and traj.totals.calls == 1
    assert provider.sent[0][1].must_answer
    assert "budget of 1 step" in (traj.system_prompt or "")


def test_authors_mode_restarts_then_fails(tmp_path: Path, item: Item, slide_path: Path) -> None:
    provider = scripted(tmp_path, [crop(0, 0, 1000, 1000)] * 20)
    traj = run(item, slide_path, provider, mode="authors", max_steps=2, max_restarts=3)
    assert traj.status == "step_limit_exceeded"
    assert traj.restarts == 3
    assert traj.totals.calls == 2 * 4
    assert [c.attempt for c in traj.calls] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert not any(ctx.must_answer for _, ctx in provider.sent)  # no forced answer in authors mode
    # every restart begins from scratch: the overview message alone
    restart = provider.sent[2][0]
    assert len(restart.messages) == 1


def test_authors_mode_restart_then_answer(tmp_path: Path, item: Item, slide_path: Path) -> None:
    lines = [crop(0, 0, 1000, 1000), crop(0, 0, 900, 900), crop(0, 0, 800, 800), answer(4)]
    traj = run(item, slide_path, scripted(tmp_path, lines), mode="authors", max_steps=2)
    assert traj.status == "answered" and traj.restarts == 1 and traj.answer == '{"answer": 4}'
    assert "do not rush" in (traj.system_prompt or "")  # the authors' pacing, in our words


def test_tools_turn_with_several_crops(tmp_path: Path, item: Item, slide_path: Path) -> None:
    turn = [crop(0, 0, 1000, 1000, "c1"), crop(2000, 2000, 1000, 1000, "c2")]
    provider = scripted(tmp_path, [turn, answer()])
    traj = run(item, slide_path, provider, max_steps=5)
    assert traj.status == "answered"
    assert traj.totals.calls == 2 and traj.totals.crops == 2 and traj.totals.steps == 3
    replies = provider.sent[1][0].messages[2:]
    assert [m.in_reply_to for m in replies] == ["c1", "c2"]  # type: ignore[union-attr]


def test_notes_are_repeated_after_later_crops(tmp_path: Path, item: Item, slide_path: Path) -> None:
    provider = scripted(tmp_path, [note("necrosis top left"), crop(0, 0, 1000, 1000), answer()])
    traj = run(item, slide_path, provider, max_steps=5, note_tool=True)
    assert traj.notes == ["necrosis top left"]
    last = provider.sent[2][0].messages[-1]
    assert "Your notes so far:\n- necrosis top left" in [p.text for p in last.parts if p.type == "text"]  # type: ignore[union-attr]


def test_max_images_in_context_drops_older_crop_images(tmp_path: Path, item: Item, slide_path: Path) -> None:
    boxes = [(0, 0, 1000, 1000), (1000, 0, 1000, 1000), (2000, 0, 1000, 1000), (3000, 0, 1000, 1000)]
    provider = scripted(tmp_path, [crop(*b) for b in boxes] + [answer()])
    traj = run(item, slide_path, provider, max_steps=6, max_images_in_context=3)
    assert traj.status == "answered"
    final = provider.sent[4][0]
    labels = [
        p.label for m in final.messages if m.role == "user" for p in m.parts if isinstance(p, ImagePart)
    ]
    reads = [r.read for r in traj.regions[1:]]
    assert labels == ["overview", f"crop 3 {reads[2]}", f"crop 4 {reads[3]}"]
    told = texts(final)
    for number, read in enumerate(reads[:2], start=1):
        assert f"[image no longer shown: crop {number} {read}]" in told
        assert f"Crop {number}: region {read}" in told  # their text stays
    assert "only the overview and up to 2 recent crop image(s)" in (traj.system_prompt or "")
    # without the setting every image is sent
    everything = scripted(tmp_path, [crop(*b) for b in boxes] + [answer()])
    run(item, slide_path, everything, max_steps=6)
    assert (
        sum(
            isinstance(p, ImagePart)
            for m in everything.sent[4][0].messages
            if m.role == "user"
            for p in m.parts
        )
        == 5
    )


def test_images_are_stored_once_by_hash(tmp_path: Path, item: Item, slide_path: Path) -> None:
    out = tmp_path / "out"
    provider = scripted(tmp_path, [crop(0, 0, 1000, 1000), crop(0, 0, 1000, 1000), answer()])
    traj = run(item, slide_path, provider, out, max_steps=5)
    assert len(traj.regions) == 3
    assert traj.regions[1].image == traj.regions[2].image != traj.regions[0].image
    assert sorted(p.name for p in out.glob("*.jpg")) == sorted({r.image for r in traj.regions})
    assert (
        "base64" not in (out / "trajectory.json").read_text()
        and (out / "trajectory.json").stat().st_size < 20000
    )


def test_budget_forces_the_answer_and_marks_the_item(tmp_path: Path, item: Item, slide_path: Path) -> None:
    # After one $0.01 call a $0.02 budget has room for one more: it must be the answer.
    lines = [crop(0, 0, 1000, 1000), answer(2), crop(0, 0, 500, 500)]
    provider = scripted(tmp_path, lines, cost_per_call=0.01)
    traj = run(item, slide_path, provider, max_steps=10, item_budget_usd=0.02)
    assert traj.status == "budget_exceeded"
    assert traj.answer == '{"answer": 2}'  # recorded, though scored incorrect
    assert [ctx.must_answer for _, ctx in provider.sent] == [False, True]
    assert "cost budget for this question ($0.02) is used up" in texts(provider.sent[1][0])
    assert traj.totals.cost_usd is not None and abs(traj.totals.cost_usd - 0.02) < 1e-9


def test_timeout_interrupts_a_hung_call(tmp_path: Path, item: Item, slide_path: Path) -> None:
    hung = {**answer(), "sleep": 30}
    traj = run(
        item,
        slide_path,
        scripted(tmp_path, [crop(0, 0, 1000, 1000), hung]),
        tmp_path / "o",
        item_timeout_s=1.5,
    )
    assert traj.status == "timeout" and "partial trajectory" in traj.reason
    assert [c.error_kind for c in traj.calls] == [None, "timeout"]
    assert traj.totals.crops == 1 and traj.totals.cost_usd is None  # the hung call's cost is unknown
    # Generous for a loaded CI machine: what matters is that the episode did not wait for the 30 s call.
    assert traj.totals.seconds < 20


def test_failed_calls_keep_their_usage(tmp_path: Path, item: Item, slide_path: Path) -> None:
    provider = scripted(tmp_path, [error("parse"), answer()], cost_per_call=0.5)
    traj = run(item, slide_path, provider)
    assert traj.status == "answered"
    # the scripted parse error reports a zero-cost usage; the answer call cost 0.5
    assert traj.calls[0].error_kind == "parse" and traj.calls[0].usage.cost_usd == 0.0
    assert traj.totals.cost_usd == 0.5


def test_missing_and_broken_slides(tmp_path: Path, item: Item) -> None:
    missing = run(item, tmp_path / "nope.svs", scripted(tmp_path, [answer()]), tmp_path / "m")
    assert missing.status == "slide_missing" and "nope.svs" in missing.reason
    assert (tmp_path / "m" / "trajectory.json").is_file()
    broken = tmp_path / "broken.svs"
    broken.write_bytes(b"not a slide")
    bad = run(item, broken, scripted(tmp_path, [answer()]))
    assert bad.status == "slide_error" and bad.reason and bad.totals.calls == 0


def test_box_outside_the_slide_is_fed_back_even_when_clamping(
    tmp_path: Path, item: Item, slide_path: Path
) -> None:
    provider = scripted(tmp_path, [crop(WIDTH + 10, 0, 100, 100), crop(10, 10, 300, 300), answer()])
    traj = run(item, slide_path, provider, max_steps=5)
    assert traj.status == "answered" and traj.totals.crops == 1
    assert "Invalid crop" in (traj.calls[0].feedback or "")


def test_crops_past_the_budget_in_one_turn_are_skipped(tmp_path: Path, item: Item, slide_path: Path) -> None:
    turn = [crop(0, 0, 1000, 1000, "c1"), crop(2000, 2000, 1000, 1000, "c2")]
    provider = scripted(tmp_path, [turn, answer()])
    traj = run(item, slide_path, provider, max_steps=2)
    assert traj.status == "answered" and traj.totals.crops == 1
    skipped = provider.sent[1][0].messages[-1]
    assert skipped.in_reply_to == "c2"  # type: ignore[union-attr]
    assert instructions.EXTRA_CROP_SKIPPED in texts(provider.sent[1][0])
    assert provider.sent[1][1].must_answer


def test_record_requests_names_the_file_beside_the_trajectory(
    tmp_path: Path, item: Item, slide_path: Path
) -> None:
    provider = scripted(tmp_path, [answer()])
    run(item, slide_path, provider, tmp_path / "out", record_requests=True)
    assert provider.sent[0][1].record_path == str(tmp_path / "out" / "requests.jsonl")
    quiet = scripted(tmp_path, [answer()])
    run(item, slide_path, quiet, tmp_path / "out2")
    assert quiet.sent[0][1].record_path is None


def test_authors_mode_budget_counts_calls_and_runs_every_crop_of_a_turn(
    tmp_path: Path, item: Item, slide_path: Path
) -> None:
    """paper_facts §1: the authors restart after T calls without an answer, and every crop of a
    multi-crop OpenAI turn is executed; two 2-crop turns fit in T = 3 with the answer as call 3."""
    turn = [crop(0, 0, 1000, 1000, "c1"), crop(2000, 2000, 1000, 1000, "c2")]
    turn2 = [crop(0, 2000, 1000, 1000, "c3"), crop(3000, 0, 1000, 1000, "c4")]
    provider = scripted(tmp_path, [turn, turn2, answer()])
    traj = run(item, slide_path, provider, mode="authors", max_steps=3)
    assert traj.status == "answered" and traj.restarts == 0
    assert traj.totals.calls == 3 and traj.totals.crops == 4
    assert "You have 1 step left" in texts(provider.sent[2][0])
