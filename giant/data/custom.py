"""Your own slides and questions: a task file a person writes by hand (CSV or JSONL) -> validated Items.

One row per question, columns `slide`, `question`, `options`, `answer` and optionally `id`, `task`,
`metric` (docs/custom_tasks.md). Every row is checked before anything is paid, and every problem is
reported at once, one line each naming the row, the column and the fix: a cohort file written by hand
has several mistakes at a time, and fixing them one run at a time costs a start-up each.

The items come out as MultiPathQA's do (giant.core.Item): the question is rendered with the same
answer request the MultiPathQA tasks use (giant.data.prompts), so the scorer reads the JSON it asks for:
the option number when there are options, the grade label (0..5, as PANDA) otherwise.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel

from giant import registry
from giant.core import Item
from giant.data.file_kind import bad_path, not_a_file, shown
from giant.data.prompts import VQA_TEMPLATE, format_options
from giant.errors import ConfigError

REQUIRED = ("slide", "question", "options", "answer")
OPTIONAL = ("id", "task", "metric")
COLUMNS = (*REQUIRED, *OPTIONAL)
DEFAULT_METRIC = "accuracy"
LABELS = range(0, 6)  # the answer space of a question without options: a grade 0..5 (PANDA's ISUP)
ANSWER_KEY = '"answer"'  # a question naming it asks for the JSON answer in its own words
SHOWN = 20  # problems listed one per line; the rest are counted
JSONL_SUFFIXES = (".jsonl", ".ndjson")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # a task or id: one plain name (folders, MLflow)
_SEVERAL = re.compile(r"[;|]")  # "a.svs; b.svs": several slides in one cell
_DIGITS = re.compile(r"[0-9]+")  # ASCII digits only: "²".isdigit() is true, but int("²") fails

# The answer request of a question without options, in the words of the MultiPathQA VQA wrapper
# (giant.data.prompts.VQA_TEMPLATE) so that every task asks for the same JSON shape.
LABEL_TEMPLATE = (
    "{question}\n\n"
    "Answer with a grade from 0 to 5 and respond in the following JSON format:\n"
    "```json\n"
    '{{"answer": YOUR_GRADE}}\n'
    "```\n"
)


class Problem(BaseModel):
    """One mistake in the file: where it is and how to fix it (one line)."""

    row: int | None  # data row number (1 = the first question); None: the file as a whole
    column: str | None
    message: str

    def line(self) -> str:
        where = "file" if self.row is None else f"row {self.row}"
        if self.column:
            where += f", column {self.column}"
        return f"{where}: {self.message}"


class TaskFile(BaseModel):
    """The validated items of a task file and the folder their relative slide paths hang off."""

    items: list[Item]
    wsi_root: Path


def render_question(question: str, options: Sequence[str]) -> str:
    """The text the model sees: the question, the options when there are any, and the JSON request. A
    question that already asks for the JSON answer itself (it names the `"answer"` key, as MultiPathQA's
    templates do) is sent as written."""
    if ANSWER_KEY in question:
        return question
    if options:
        return VQA_TEMPLATE.format(question=question.strip(), options=format_options(options))
    return LABEL_TEMPLATE.format(question=question.strip())


def load_task_file(path: Path, wsi_root: Path, *, check_slides: bool = True) -> TaskFile:
    """Read and validate `path`; raises ConfigError whose first line says how many problems there are
    and each further line names one (row, column, fix). `check_slides`: open every slide with
    OpenSlide too (the dry run lists missing slides itself, so it skips this)."""
    problems: list[Problem] = []
    rows = _read_rows(path, problems)
    items: list[Item] = []
    if rows is not None:
        slides: dict[int, str] = {}
        items = _items(rows, path, problems, slides)
        if check_slides and slides:
            problems += slide_problems(slides, wsi_root)
    if problems:
        problems.sort(key=lambda p: (p.row or 0, COLUMNS.index(p.column) if p.column in COLUMNS else -1))
        raise ConfigError(problem_report(path, problems))
    return TaskFile(items=_anchored(items, wsi_root), wsi_root=_root_of(items, wsi_root))


def problem_report(path: Path, problems: Sequence[Problem]) -> str:
    """The first line names the file and the count; then one line per problem (at most SHOWN)."""
    head = f"dataset.path={path}: {len(problems)} problem(s); fix them and run again"
    lines = [f"  {problem.line()}" for problem in problems[:SHOWN]]
    if len(problems) > SHOWN:
        lines.append(f"  ... and {len(problems) - SHOWN} more")
    return "\n".join([head, *lines])


def _read_rows(path: Path, problems: list[Problem]) -> list[dict[str, Any]] | None:
    """Rows as dicts (None: the file cannot be read at all; the problem says why)."""
    if (kind := not_a_file(Path(path))) is not None:  # never open a FIFO: it waits for a writer
        problems.append(Problem(row=None, column=None, message=f"{kind}; pass your task file (CSV or JSONL)"))
        return None
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(Problem(row=None, column=None, message=f"cannot be read ({exc}); pass a UTF-8 file"))
        return None
    if Path(path).suffix.lower() in JSONL_SUFFIXES:
        return _jsonl_rows(text, problems)
    reader = csv.DictReader(io.StringIO(text, newline=""))  # quoted cells may hold newlines
    header = [name.strip() for name in reader.fieldnames or []]
    if not _columns_ok(header, problems):
        return None
    rows = []
    for raw in reader:
        rows.append({str(k).strip(): v for k, v in raw.items() if k is not None})
        if raw.get(None):
            problems.append(
                Problem(
                    row=len(rows),
                    column=None,
                    message="more cells than columns; quote a cell that holds a comma",
                )
            )
    return rows


def _jsonl_rows(text: str, problems: list[Problem]) -> list[dict[str, Any]] | None:
    rows: list[dict[str, Any]] = []
    keys: dict[str, None] = {}
    for number, line in enumerate((ln for ln in text.splitlines() if ln.strip()), start=1):
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(row=number, column=None, message=f"not a JSON object ({exc.msg})"))
            value = {}
        if not isinstance(value, dict):
            problems.append(Problem(row=number, column=None, message="not a JSON object; write {...}"))
            value = {}
        keys.update(dict.fromkeys(str(k) for k in value))
        rows.append(value)
    unknown = [key for key in keys if key not in COLUMNS]
    for key in unknown:
        problems.append(_unknown_column(key))
    return rows


def _columns_ok(header: list[str], problems: list[Problem]) -> bool:
    missing = [c for c in REQUIRED if c not in header]
    for column in missing:
        problems.append(
            Problem(
                row=None, column=column, message=f"missing column; the header needs {', '.join(REQUIRED)}"
            )
        )
    for column in header:
        if column not in COLUMNS:
            problems.append(_unknown_column(column))
    return not missing


def _unknown_column(column: str) -> Problem:
    return Problem(row=None, column=column, message=f"unknown column; the columns are {', '.join(COLUMNS)}")


def _items(
    rows: list[dict[str, Any]], path: Path, problems: list[Problem], slides: dict[int, str]
) -> list[Item]:
    """The rows' items; `slides` gets every row's well-formed slide path, the row's other cells
    aside, so that a missing slide is reported with the row's other problems."""
    items: list[Item] = []
    seen: dict[str, int] = {}
    metrics: dict[str, tuple[str, int]] = {}
    default_task = _default_task(path)
    for number, row in enumerate(rows, start=1):
        found: list[Problem] = []
        item = _item(row, number, default_task, found, slides)
        problems += found
        if item is None:
            continue
        if (first := seen.get(item.key)) is not None:
            problems.append(
                Problem(
                    row=number,
                    column="id",
                    message=f"duplicate id {item.benchmark_id} of task {item.benchmark} (row {first}); "
                    "give every question of a task its own id",
                )
            )
            continue
        first_metric = metrics.setdefault(item.benchmark, (item.metric, number))
        if first_metric[0] != item.metric:
            problems.append(
                Problem(
                    row=number,
                    column="metric",
                    message=f"{item.metric}, but row {first_metric[1]} of task {item.benchmark} says "
                    f"{first_metric[0]}; one metric per task",
                )
            )
            continue
        seen[item.key] = number
        items.append(item)
    if not rows:
        problems.append(Problem(row=None, column=None, message="no question in the file; add one row each"))
    return items


def _item(
    row: dict[str, Any], number: int, default_task: str, problems: list[Problem], slides: dict[int, str]
) -> Item | None:
    def text(column: str) -> str:
        value = row.get(column)
        return "" if value is None else str(value).strip()

    slide = _slide(row.get("slide"), number, problems)
    if slide is not None:
        slides[number] = slide
    question = text("question")
    if not question:
        problems.append(Problem(row=number, column="question", message="empty; write the question"))
    options = _options(row.get("options"), number, problems)
    truth = _answer(row.get("answer"), options, number, problems) if options is not None else None
    task = text("task") or default_task
    if not _NAME.match(task):
        problems.append(
            Problem(
                row=number, column="task", message=f"{task!r} is not a plain name; use letters, digits, _ . -"
            )
        )
    item_id = text("id") or str(number)
    if not _NAME.match(item_id):
        problems.append(
            Problem(
                row=number,
                column="id",
                message=f"{item_id!r} is not a plain name; use letters, digits, _ . -",
            )
        )
    metric = text("metric") or DEFAULT_METRIC
    if metric not in (metrics := registry.members("metric")):
        problems.append(
            Problem(
                row=number,
                column="metric",
                message=f"{metric!r}; use {' or '.join(metrics)} (or leave it empty)",
            )
        )
    if problems or slide is None or options is None or truth is None:
        return None
    return Item(
        benchmark=task,
        benchmark_id=item_id,
        image_path=slide,
        prompt=render_question(str(row.get("question")), options),
        options=options,
        truth=truth,
        metric=metric,
        file_id=PurePosixPath(slide).name,  # no download id: the slide's name, as the demo set has it
    )


def _slide(value: Any, number: int, problems: list[Problem]) -> str | None:
    several = "several slides per question are not supported; write one slide per row"
    if isinstance(value, list):
        if len(value) != 1:
            problems.append(Problem(row=number, column="slide", message=several))
            return None
        value = value[0]
    slide = "" if value is None else str(value).strip()
    if not slide:
        problems.append(Problem(row=number, column="slide", message="empty; give the slide's file path"))
        return None
    if _SEVERAL.search(slide) or slide.startswith("["):
        problems.append(Problem(row=number, column="slide", message=several))
        return None
    if (bad := bad_path(slide)) is not None:
        problems.append(Problem(row=number, column="slide", message=f"{shown(slide)} {bad}"))
        return None
    normal = PurePosixPath(os.path.normpath(slide.replace("\\", "/")))
    if not normal.is_absolute() and normal.parts and normal.parts[0] == "..":
        problems.append(
            Problem(
                row=number,
                column="slide",
                message=f"{slide!r} leaves dataset.wsi_root; give a path inside it, or an absolute path",
            )
        )
        return None
    return str(normal)


def _options(value: Any, number: int, problems: list[Problem]) -> tuple[str, ...] | None:
    """A JSON list of at least two distinct strings, or empty (a graded question)."""
    fix = 'write a JSON list such as ["Benign", "Malignant"], or leave it empty'
    if value is None or (isinstance(value, str) and not value.strip()):
        return ()
    parsed = value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            problems.append(
                Problem(row=number, column="options", message=f"not JSON ({value[:40]!r}); {fix}")
            )
            return None
    if not isinstance(parsed, list) or not all(isinstance(o, str) and o.strip() for o in parsed):
        problems.append(Problem(row=number, column="options", message=f"not a list of texts; {fix}"))
        return None
    if len(parsed) == 1 or len({o.strip() for o in parsed}) != len(parsed):
        problems.append(
            Problem(row=number, column="options", message="needs two or more different options; " + fix)
        )
        return None
    return tuple(o.strip() for o in parsed)


def _answer(value: Any, options: tuple[str, ...], number: int, problems: list[Problem]) -> int | None:
    """An option's number (1-based) or its text; without options a grade label 0..5."""
    text = "" if value is None else str(value).strip()
    if isinstance(value, bool) or not text:
        problems.append(Problem(row=number, column="answer", message="empty; give the right answer"))
        return None
    if options:
        if _DIGITS.fullmatch(text) and 1 <= int(text) <= len(options):
            return int(text)
        by_text = {o.casefold(): i for i, o in enumerate(options, start=1)}
        if text.casefold() in by_text:
            return by_text[text.casefold()]
        problems.append(
            Problem(
                row=number,
                column="answer",
                message=f"{text!r} is not among the options; give an option's number 1..{len(options)} "
                "or its exact text",
            )
        )
        return None
    if _DIGITS.fullmatch(text) and int(text) in LABELS:
        return int(text)
    problems.append(
        Problem(
            row=number,
            column="answer",
            message=f"{text!r} is not a label {LABELS.start}..{LABELS.stop - 1}; without options the answer "
            "is a grade label (give options for other answers)",
        )
    )
    return None


def _default_task(path: Path) -> str:
    """The file's name without its extension, made into a plain name (the task of rows without one)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(path).stem).strip("_.-")
    return name or "custom"


def slide_problems(slides: dict[int, str], wsi_root: Path) -> list[Problem]:
    """Each distinct slide located and opened once (giant.data.check); a problem on every row whose
    slide is missing or unreadable."""
    from giant.data.check import check_slides

    probes = [
        Item(benchmark="rows", benchmark_id=str(row), image_path=slide, prompt="", truth=0, metric="accuracy")
        for row, slide in slides.items()
    ]
    report = check_slides(_anchored(probes, wsi_root), _root_of(probes, wsi_root))
    problems = []
    for found in report.slides:
        if found.status == "present":
            continue
        for key in found.keys:
            row = int(key.rpartition("/")[2])
            if found.status != "missing":
                fix = f"OpenSlide cannot read it ({found.reason}); replace the file"
            elif (kind := not_a_file(_on_disk(slides[row], wsi_root))) not in (None, "no such file"):
                fix = f"{kind}; give the slide's file path"
            else:
                fix = f"no such file (a relative path is under dataset.wsi_root={wsi_root}); fix the path"
            problems.append(Problem(row=row, column="slide", message=f"{slides[row]}: {fix}"))
    return problems


def _on_disk(slide: str, wsi_root: Path) -> Path:
    """Where a row's slide path points (a relative one: under dataset.wsi_root)."""
    return Path(slide) if Path(slide).is_absolute() else Path(wsi_root) / slide


def _root_of(items: Sequence[Item], wsi_root: Path) -> Path:
    """Relative slide paths hang off dataset.wsi_root; with an absolute one in the file, every path is
    made absolute and hangs off the filesystem root (the slide resolver takes paths below a root)."""
    if any(PurePosixPath(item.image_path).is_absolute() for item in items):
        return Path("/")
    return Path(wsi_root)


def _anchored(items: list[Item], wsi_root: Path) -> list[Item]:
    """Items whose image_path is relative to `_root_of(items, wsi_root)`."""
    if _root_of(items, wsi_root) != Path("/"):
        return items
    out = []
    for item in items:
        absolute = (
            Path(item.image_path)
            if Path(item.image_path).is_absolute()
            else Path(wsi_root).absolute() / item.image_path
        )
        out.append(item.model_copy(update={"image_path": str(absolute).lstrip("/")}))
    return out
