"""The task file format (giant.data.custom) and the digest of what a run scores (giant.data.digest), on
files the tests write and slides giant.wsi.synthetic writes; the CLI runs are in
tests/cli/test_custom_tasks.py."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from giant.data.custom import LABEL_TEMPLATE, SHOWN, load_task_file
from giant.data.demo import build_demo
from giant.data.digest import PUBLISHED_SOURCE, DatasetDigests, task_digests
from giant.data.multipathqa import content_hash, load_multipathqa
from giant.errors import ConfigError
from giant.eval.answers import extract_label
from giant.wsi.synthetic import write_synthetic_slide

HEADER = "slide,question,options,answer,id,task,metric\n"


@pytest.fixture(scope="module")
def slides(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("slides")
    for seed in (1, 2):
        write_synthetic_slide(root / f"s{seed}.svs", 1200, 900, seed=seed)
    (root / "broken.svs").write_bytes(b"not a slide")
    return root


def _write(tmp_path: Path, text: str, name: str = "cohort.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _problems(path: Path, root: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_task_file(path, root)
    head, *lines = str(info.value).splitlines()
    assert head.startswith(f"dataset.path={path}: ")
    return [line.strip() for line in lines]


def test_a_csv_becomes_items_with_the_answer_request_the_scorer_reads(tmp_path: Path, slides: Path) -> None:
    path = _write(
        tmp_path,
        HEADER + 's1.svs,Which organ?,"[""Liver"", ""Lung""]",lung,,,\n'
        "s2.svs,What grade?,,4,,grading,balanced_accuracy\n",
    )
    items = load_task_file(path, slides).items
    assert [(i.key, i.truth, i.metric, i.options) for i in items] == [
        ("cohort/1", 2, "accuracy", ("Liver", "Lung")),  # the answer by its text, any case; task = file name
        ("grading/2", 4, "balanced_accuracy", ()),
    ]
    assert "1. Liver\n2. Lung" in items[0].prompt and '{"answer": YOUR_ANSWER}' in items[0].prompt
    assert items[1].prompt == LABEL_TEMPLATE.format(question="What grade?")
    for item in items:  # what the prompt asks for is what the scorer reads
        reply = f'<response>{{"answer": {item.truth}}}</response>'
        assert extract_label(reply, item.benchmark, item.options).label == item.truth


def test_jsonl_rows_take_lists_and_numbers(tmp_path: Path, slides: Path) -> None:
    rows = [
        {"slide": "s1.svs", "question": "Which organ?", "options": ["Liver", "Lung"], "answer": 1, "id": "a"},
        {
            "slide": str(slides / "s2.svs"),
            "question": "What grade?",
            "answer": 0,
            "id": "b",
            "task": "grading",
        },
    ]
    path = _write(tmp_path, "\n".join(json.dumps(r) for r in rows) + "\n", "cohort.jsonl")
    loaded = load_task_file(path, slides)
    assert [(i.key, i.truth) for i in loaded.items] == [("cohort/a", 1), ("grading/b", 0)]
    assert loaded.wsi_root == Path("/")  # an absolute slide path: every path is made absolute
    assert all((loaded.wsi_root / i.image_path).is_file() for i in loaded.items)


def test_several_slides_per_question_are_refused_on_one_line(tmp_path: Path, slides: Path) -> None:
    path = _write(tmp_path, HEADER + "s1.svs;s2.svs,Which organ?,,1,,,\n")
    [line] = _problems(path, slides)
    assert (
        line == "row 1, column slide: several slides per question are not supported; write one slide per row"
    )
    jsonl = _write(
        tmp_path, json.dumps({"slide": ["s1.svs", "s2.svs"], "question": "Q", "answer": 1}), "x.jsonl"
    )
    assert [p.split(":")[0] for p in _problems(jsonl, slides)] == ["row 1, column slide"]


def test_every_problem_is_one_line_naming_row_column_and_fix(tmp_path: Path, slides: Path) -> None:
    path = _write(
        tmp_path,
        "slide,question,options,answer,colour\n"
        "broken.svs,Q,,1\n"
        'missing.svs,Q,"[""A""]",1\n'
        "../outside.svs,Q,,7\n",
    )
    lines = _problems(path, slides)
    columns = "slide, question, options, answer, id, task, metric"
    assert lines[0] == f"file, column colour: unknown column; the columns are {columns}"
    assert lines[1].startswith("row 1, column slide: broken.svs: OpenSlide cannot read it")
    assert lines[2].startswith(
        f"row 2, column slide: missing.svs: no such file (a relative path is under dataset.wsi_root={slides})"
    )
    assert lines[3] == (
        'row 2, column options: needs two or more different options; write a JSON list such as ["Benign", '
        '"Malignant"], or leave it empty'
    )
    assert lines[4].startswith("row 3, column slide: '../outside.svs' leaves dataset.wsi_root")
    assert lines[5].startswith("row 3, column answer: '7' is not a label 0..5")
    assert len(lines) == 6


def test_odd_answers_and_slide_paths_are_problem_lines_not_tracebacks(tmp_path: Path, slides: Path) -> None:
    """`²` passes str.isdigit but not int(); a NUL or a 5,000-byte name cannot be a file name (the file
    system would raise ValueError or ENAMETOOLONG); a directory or FIFO is said to be one."""
    (tmp_path / "a_dir.svs").mkdir()
    os.mkfifo(tmp_path / "a_pipe.svs")
    rows = [
        {"slide": "s1.svs", "question": "Grade?", "options": "", "answer": "\u00b2"},
        {"slide": "s1.svs", "question": "Organ?", "options": ["Liver", "Lung"], "answer": "\u00b2"},
        {"slide": "s1\u0000.svs", "question": "Q", "answer": 1},
        {"slide": "x" * 5000 + ".svs", "question": "Q", "answer": 1},
        {"slide": str(tmp_path / "a_dir.svs"), "question": "Q", "answer": 1},
        {"slide": str(tmp_path / "a_pipe.svs"), "question": "Q", "answer": 1},
    ]
    path = _write(tmp_path, "".join(json.dumps(row) + "\n" for row in rows), "odd.jsonl")
    lines = _problems(path, slides)
    assert lines[0] == (
        "row 1, column answer: '\u00b2' is not a label 0..5; without options the answer is a grade label "
        "(give options for other answers)"
    )
    assert lines[1].startswith("row 2, column answer: '\u00b2' is not among the options")
    assert lines[2].startswith("row 3, column slide: ") and "holds a NUL character" in lines[2]
    assert lines[3].startswith("row 4, column slide: ") and "has a file name of 5,004 bytes" in lines[3]
    fix = "give the slide's file path"
    assert lines[4] == f"row 5, column slide: {tmp_path / 'a_dir.svs'}: a directory, not a file; {fix}"
    assert (
        lines[5] == f"row 6, column slide: {tmp_path / 'a_pipe.svs'}: a FIFO (named pipe), not a file; {fix}"
    )
    assert len(lines) == 6


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_task_file_that_is_a_directory_or_fifo_is_named_as_one_and_never_read(
    tmp_path: Path, slides: Path, kind: str
) -> None:
    """A FIFO is not opened: reading one waits for a writer (here a writer waits, so a read would end
    with an empty file, not the line)."""
    path = tmp_path / "cohort.csv"
    if kind == "directory":
        path.mkdir()
    else:
        os.mkfifo(path)
        writer = threading.Thread(target=lambda: path.write_text(HEADER), daemon=True)
        writer.start()
    try:
        lines = _problems(path, slides)
    finally:
        if kind == "fifo":  # release the writer whatever happened
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            writer.join(5)
            os.close(fd)
    what = "a directory, not a file" if kind == "directory" else "a FIFO (named pipe), not a file"
    assert lines == [f"file: {what}; pass your task file (CSV or JSONL)"]


def test_a_long_list_shows_the_first_problems_and_counts_the_rest(tmp_path: Path, slides: Path) -> None:
    path = _write(tmp_path, HEADER + "".join(f"s1.svs,Q,,9,{n},,\n" for n in range(SHOWN + 5)))
    lines = _problems(path, slides)
    assert len(lines) == SHOWN + 1 and lines[-1] == "... and 5 more"


def test_a_missing_column_is_named(tmp_path: Path, slides: Path) -> None:
    path = _write(tmp_path, "slide,question,answer\ns1.svs,Q,1\n")
    assert _problems(path, slides) == [
        "file, column options: missing column; the header needs slide, question, options, answer"
    ]


def test_the_digest_follows_the_questions_not_the_file(tmp_path: Path, slides: Path) -> None:
    rows = ['s1.svs,Which organ?,"[""Liver"", ""Lung""]",2,a,t,\n', "s2.svs,What grade?,,3,b,t,\n"]
    first = load_task_file(_write(tmp_path, HEADER + "".join(rows), "one.csv"), slides).items
    reordered = load_task_file(_write(tmp_path, HEADER + "".join(reversed(rows)), "two.csv"), slides).items
    absolute = rows[1].replace("s2.svs", str(slides / "s2.svs"))
    moved = load_task_file(_write(tmp_path, HEADER + rows[0] + absolute, "three.csv"), slides).items
    changed = load_task_file(
        _write(tmp_path, HEADER + rows[0] + rows[1].replace(",3,", ",4,"), "four.csv"), slides
    ).items
    digest = task_digests(first)
    assert task_digests(reordered) == task_digests(moved) == digest
    assert task_digests(changed) != digest
    assert DatasetDigests.of(first, location="/x/one.csv").source == "one.csv"


def test_the_published_multipathqa_is_named_as_such(multipathqa_csv: Path) -> None:
    dataset = load_multipathqa(multipathqa_csv)
    assert DatasetDigests.of(dataset.items, location=str(multipathqa_csv)).name == PUBLISHED_SOURCE
    gtex = load_multipathqa(multipathqa_csv, benchmarks=["gtex"])
    assert DatasetDigests.of(gtex.items, location="MultiPathQA.csv").published == PUBLISHED_SOURCE
    edited = [gtex.items[0].model_copy(update={"truth": gtex.items[0].truth % 20 + 1}), *gtex.items[1:]]
    assert DatasetDigests.of(edited, location="MultiPathQA.csv").published is None


def test_the_guide_s_example_file_loads(tmp_path: Path) -> None:
    """docs/custom_tasks.md's complete example, over slides of the names it uses (its absolute path
    pointed at them)."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "custom_tasks.md").read_text()
    example = page.split("```csv\n", 1)[1].split("```", 1)[0]
    root = tmp_path / "slides"
    for seed, name in enumerate(("case_01.svs", "case_02.svs"), start=1):
        write_synthetic_slide(root / name, 800, 600, seed=seed)
    path = _write(tmp_path, example.replace("/data/archive", str(root)), "my_cohort.csv")
    items = load_task_file(path, root).items
    assert [(i.key, i.truth, i.metric) for i in items] == [
        ("organ/organ-1", 2, "accuracy"),
        ("organ/organ-2", 3, "accuracy"),
        ("grade/grade-1", 3, "balanced_accuracy"),
        ("grade/grade-2", 0, "balanced_accuracy"),
    ]


def test_the_demo_s_task_file_gives_the_items_of_its_multipathqa_csv(tmp_path: Path) -> None:
    """The demo runs from its task file; its items (hence its dataset hash and the prompts, hence the
    ledger keys of earlier demo runs) are those of the MultiPathQA-format demo.csv."""
    demo = build_demo(tmp_path)
    items = load_task_file(demo.task_file, demo.wsi_root).items
    assert items == load_multipathqa(demo.csv_path).items
    assert content_hash(items) == load_multipathqa(demo.csv_path).content_hash
