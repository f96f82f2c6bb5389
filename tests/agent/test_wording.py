"""The prompt wording as template files (giant.agent.wording): the shipped templates send what the code
sent before them, byte for byte, and a folder of your own replaces them as a different method.

tests/agent/data/shipped_prompts.json holds the texts the code sent before the templates existed
(giant/agent/instructions.py as of commit a10bbcc), for every mode, T in {1, 2, 20}, with and without
the note tool and max_images_in_context: ledger keys and config hashes of earlier runs depend on
these bytes.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

import giant.config  # noqa: F401  (registers `tools: all`, which composing a provider's S needs)
from giant.agent import instructions
from giant.agent.modes import find_mode, parse_agent
from giant.agent.wording import SHIPPED_DIR, Wording, check_folder

SHIPPED = json.loads((Path(__file__).with_name("data") / "shipped_prompts.json").read_text())


def _sent() -> dict[str, str]:
    out = {}
    for mode, t, note, ctx in itertools.product(
        ("giant", "paper", "authors"), (1, 2, 20), (False, True), (None, 1, 3)
    ):
        cfg = parse_agent(
            {"mode": mode, "max_steps": t, "note_tool": note, "max_images_in_context": ctx}, "openai"
        )
        out[f"system/{mode}/T{t}/note{int(note)}/ctx{ctx}"] = find_mode(mode).system_prompt(cfg, 6000, 4000)
    for t, ctx in itertools.product((2, 5), (None, 1, 3)):
        cfg = parse_agent({"mode": "random_regions", "max_steps": t, "max_images_in_context": ctx}, "openai")
        out[f"random_regions/T{t}/ctx{ctx}"] = find_mode("random_regions").system_prompt(cfg, 6000, 4000)
    for left in (0, 1, 2, 7):
        out[f"steps_left/{left}"] = instructions.calls_left_text(left)
        out[f"overview/{left}"] = instructions.overview_text(6000, 4000, left)
    out["step_limit"] = instructions.STEP_LIMIT_CORRECTIVE
    out["answer_only"] = instructions.ANSWER_ONLY_CORRECTIVE
    out["force/steps"] = instructions.force_answer_text(["r1 (x=1, y=2, w=3, h=4)"], ["a note"], "Q?")
    out["force/budget"] = instructions.force_answer_text([], [], "Q?", budget_usd=0.5)
    return out


def test_the_shipped_templates_send_the_earlier_texts_byte_for_byte() -> None:
    sent = _sent()
    assert sent.keys() == SHIPPED.keys()
    for key, text in SHIPPED.items():
        assert sent[key] == text, key


def test_a_folder_replaces_the_templates_it_holds(tmp_path: Path) -> None:
    system = (
        (SHIPPED_DIR / "system.j2").read_text().replace("You are an expert pathologist", "You are a tutor")
    )
    (tmp_path / "system.j2").write_text(system)
    (tmp_path / "steps_left.j2").write_text("{{ left }} to go.")
    cfg = parse_agent({"mode": "giant", "max_steps": 5, "prompts": str(tmp_path)}, "openai")
    text = find_mode("giant").system_prompt(cfg, 6000, 4000)
    assert text.startswith("You are a tutor examining a whole-slide image")
    assert text.endswith(instructions.SHIPPED.answer_format())  # answer_format.j2 stays the shipped one
    assert instructions.words_of(cfg).steps_left(3) == "3 to go."
    assert Wording(tmp_path).digest is not None and Wording(None).digest is None


@pytest.mark.parametrize(
    ("name", "removed", "named"),
    [
        ("system.j2", "max_steps", "the step budget: add {{ max_steps }}"),  # a fixed number instead
        ("system.j2", "{{ width }}", "the slide size: add {{ width }}"),
        ("system.j2", "{{ answer_format }}", "the answer format: add {{ answer_format }}"),
        ("random_regions_system.j2", "{{ answer_format }}", "the answer format"),
    ],
)
def test_a_template_without_a_required_field_is_refused_on_one_line(
    tmp_path: Path, name: str, removed: str, named: str
) -> None:
    text = (SHIPPED_DIR / name).read_text()
    body = text.split("-#}", 1)[1]  # the comment names every field; the body is what counts
    (tmp_path / name).write_text(body.replace(removed, "20"))
    with pytest.raises(ValueError) as info:
        parse_agent({"mode": "giant", "prompts": str(tmp_path)}, "openai")
    message = str(info.value)
    assert named in message and f"{tmp_path / name}" in message


@pytest.mark.parametrize(
    ("name", "added", "named"),
    [
        # the attribute walk that ran a shell command under a plain Environment
        ("system.j2", "{{ cycler.__init__.__globals__.os.popen('id').read() }}", "is unsafe"),
        ("system.j2", "{{ ''.__class__.__mro__[1].__subclasses__() }}", "is unsafe"),
        (
            "system.j2",
            "{% if max_steps > 99 %}{{ patient_name }}{% endif %}",
            "{{ patient_name }} is not a field",
        ),
        ("steps_left.j2", "{% include 'other.j2' %}", "{% include %} is not allowed"),
        ("steps_left.j2", "{% import 'macros.j2' as m %}", "{% import %} is not allowed"),
        ("steps_left.j2", "{% extends 'base.j2' %}", "{% extends %} is not allowed"),
        ("steps_left.j2", "{{ 'x' * 10000000 }}", "over 100,000"),
        ("steps_left.j2", "{% for i in range(100000) %}{{ i }}{% endfor %}", "over 100,000 characters"),
        (
            "steps_left.j2",
            "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}",
            "over 1 s",
        ),
        ("steps_left.j2", "{{ left / 0 }}", "ZeroDivisionError"),
    ],
)
def test_a_template_that_reaches_past_its_fields_is_refused_on_one_line_before_any_call(
    tmp_path: Path, name: str, added: str, named: str
) -> None:
    """Rendered in the sandbox against sample fields when the settings are read: the run never starts."""
    text = (SHIPPED_DIR / name).read_text()
    (tmp_path / name).write_text(text + "\n" + added + "\n")
    with pytest.raises(ValueError) as info:
        check_folder(tmp_path)
    message = str(info.value)
    assert named in message and str(tmp_path / name) in message and "\n" not in message
    with pytest.raises(ValueError, match=r"is not a field|cannot be rendered|is not allowed"):
        parse_agent({"mode": "giant", "prompts": str(tmp_path)}, "openai")


def test_the_refused_template_stops_the_dry_run_with_exit_2_and_runs_nothing(tmp_path: Path) -> None:
    """The job in-process (giant.evaluate): the one line naming the file that the command line prints
    with exit 2 (a ConfigError); the shell command never ran."""
    import giant
    from giant.errors import ConfigError

    marker = tmp_path / "ran"
    (tmp_path / "words").mkdir()
    system = (SHIPPED_DIR / "system.j2").read_text()
    (tmp_path / "words" / "system.j2").write_text(
        system + "{{ cycler.__init__.__globals__.os.popen('touch " + str(marker) + "').read() }}\n"
    )
    overrides = ["dry_run=true", "limit=1", f"agent.prompts={tmp_path / 'words'}"]
    with pytest.raises(ConfigError) as err:
        giant.evaluate(overrides, output_dir=tmp_path / "job")
    (line,) = str(err.value).splitlines()
    assert "system.j2 cannot be rendered" in line
    assert not marker.exists()
