"""MultiPathQA.csv (or any CSV in its format, such as the demo set) -> validated Items.

Everything the scorer relies on is settled here once: the prompt is rendered exactly as the model
will see it, the truth is a canonical int, and known data defects are reported instead of being
silently scored (paper_facts §5).
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from pydantic import BaseModel

from giant import registry
from giant.core import Item
from giant.data.defects import Defect
from giant.data.hub import HubFile, download
from giant.data.prompts import render_prompt
from giant.errors import ConfigError

REQUIRED_COLUMNS = (
    "benchmark_name",
    "benchmark_id",
    "image_path",
    "answer",
    "options",
    "metric_type",
    "prompt",
)
# Every column of the released CSV, in its order (what a file "in the MultiPathQA format" has).
CSV_COLUMNS = (
    "benchmark_name",
    "benchmark_id",
    "image_path",
    "answer",
    "options",
    "image_exists",
    "patch_exists",
    "is_valid",
    "metric_type",
    "file_id",
    "prompt",
)
GRADES = range(0, 6)  # ISUP 0 (benign) .. 5, the label space of every task without options

# The released CSV gives 10 SlideBench rows the question of the ExpertVQA row with the same id.
DEFECTIVE = "tcga_slidebench"
DEFECT_SOURCE = "tcga_expert_vqa"


class Dataset(BaseModel):
    items: list[Item]
    defects: list[Defect]
    source: str  # where the CSV came from (path or hf://...)
    content_hash: str  # sha256 of the loaded items: changes with the data, not with the CSV's path

    @property
    def benchmarks(self) -> list[str]:
        return list(dict.fromkeys(item.benchmark for item in self.items))


def load_multipathqa(
    csv: Path | HubFile,
    *,
    benchmarks: Sequence[str] | None = None,
    slidebench_fix: Path | None = None,
    drop_defective: bool = False,
) -> Dataset:
    """Load, validate and render every row of a local CSV or one downloaded from the Hub; `benchmarks`
    selects tasks (None = all in the CSV).

    `slidebench_fix` is the authors' slidebench_small.csv (columns ID, Question): defective rows get
    their real question from it; `drop_defective` removes defective rows that remain unrepaired.
    """
    path, source = (
        _download(csv) if isinstance(csv, HubFile) else (_existing(csv, "dataset.csv_path"), str(csv))
    )
    frame = _read_csv(path, REQUIRED_COLUMNS)
    rows: list[dict[str, str]] = [{str(k): str(v) for k, v in r.items()} for r in frame.to_dict("records")]
    items = [_row_to_item(row, i + 1, path) for i, row in enumerate(rows)]
    _check_unique(items, path)

    defects = _find_defects(rows)
    fixes = _read_fixes(_existing(slidebench_fix, "dataset.slidebench_fix")) if slidebench_fix else {}
    items, defects = _resolve_defects(items, defects, fixes, drop_defective)

    if benchmarks is not None:
        items, defects = _select(items, defects, benchmarks, path)
    return Dataset(items=items, defects=defects, source=source, content_hash=content_hash(items))


def _existing(path: Path, setting: str) -> Path:
    if not Path(path).is_file():
        raise ConfigError(f"{setting}: file not found: {path}")
    return Path(path)


def _download(hub: HubFile) -> tuple[Path, str]:
    return download(hub, instead="dataset.csv_path"), f"hf://datasets/{hub.repo}/{hub.filename}"


def _read_csv(path: Path, columns: Sequence[str]) -> pd.DataFrame:
    """pandas' parser honours quoted newlines in the prompt field; everything stays a string."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise ConfigError(f"{path}: not a readable CSV ({type(exc).__name__}: {exc})") from exc
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ConfigError(f"{path}: missing column(s) {', '.join(missing)}")
    return frame


def _row_to_item(row: dict[str, str], number: int, path: Path) -> Item:
    where = f"{path} data row {number} ({row['benchmark_name']}/{row['benchmark_id']})"
    options = _parse_options(row["options"], where)
    metric = row["metric_type"].strip()
    if metric not in (metrics := registry.members("metric")):
        raise ConfigError(f"{where}: metric_type {metric!r} is not one of {', '.join(metrics)}")
    try:
        prompt = render_prompt(row["prompt"], options)
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(f"{where}: prompt is not a valid template ({type(exc).__name__}: {exc})") from exc
    return Item(
        benchmark=row["benchmark_name"].strip(),
        benchmark_id=row["benchmark_id"].strip(),
        image_path=row["image_path"].strip(),
        prompt=prompt,
        options=options,
        truth=_canonical_truth(row["answer"], options, where),
        metric=metric,
        file_id=row.get("file_id", "").strip(),
    )


def _parse_options(text: str, where: str) -> tuple[str, ...]:
    """A Python list literal with single quotes (json.loads fails on it), or empty."""
    if not text.strip():
        return ()
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError) as exc:
        raise ConfigError(f"{where}: options is not a Python list literal: {text[:80]!r}") from exc
    if not isinstance(value, list | tuple) or not all(isinstance(o, str) for o in value):
        raise ConfigError(f"{where}: options must be a list of strings, got {text[:80]!r}")
    return tuple(value)


def _canonical_truth(answer: str, options: tuple[str, ...], where: str) -> int:
    """A digit string is a 1-based option index (or a grade); otherwise it must name an option
    (gtex gives the organ name). Checked against the item's label space."""
    text = answer.strip()
    if text.isdigit():
        label = int(text)
    elif text in options:
        label = options.index(text) + 1
    else:
        raise ConfigError(f"{where}: answer {answer!r} is neither a number nor one of the options")
    valid = range(1, len(options) + 1) if options else GRADES
    if label not in valid:
        raise ConfigError(
            f"{where}: answer {label} is outside the valid labels {valid.start}..{valid.stop - 1}"
        )
    return label


def _check_unique(items: list[Item], path: Path) -> None:
    seen: set[str] = set()
    for item in items:
        if item.key in seen:
            raise ConfigError(f"{path}: duplicate question key {item.key} (benchmark_name, benchmark_id)")
        seen.add(item.key)


def _find_defects(rows: list[dict[str, str]]) -> list[Defect]:
    """A SlideBench row whose raw prompt equals the ExpertVQA row with the same id has the wrong
    question (its options and answer are SlideBench's), so it cannot be answered as asked."""
    expert = {
        r["benchmark_id"].strip(): r["prompt"] for r in rows if r["benchmark_name"].strip() == DEFECT_SOURCE
    }
    return [
        Defect(
            benchmark=DEFECTIVE,
            benchmark_id=bid,
            description=f"prompt duplicates {DEFECT_SOURCE}/{bid}; options and answer are SlideBench's",
        )
        for r in rows
        if r["benchmark_name"].strip() == DEFECTIVE
        and expert.get(bid := r["benchmark_id"].strip()) == r["prompt"]
    ]


def _read_fixes(path: Path) -> dict[str, str]:
    frame = _read_csv(path, ("ID", "Question"))
    return {str(r["ID"]).strip(): str(r["Question"]) for r in frame.to_dict("records")}


def _resolve_defects(
    items: list[Item], defects: list[Defect], fixes: dict[str, str], drop: bool
) -> tuple[list[Item], list[Defect]]:
    by_key = {d.key: d for d in defects}
    kept: list[Item] = []
    resolved: dict[str, Defect] = {}
    for item in items:
        defect = by_key.get(item.key)
        if defect is None:
            kept.append(item)
        elif item.benchmark_id in fixes:
            prompt = render_prompt(fixes[item.benchmark_id].strip(), item.options)
            kept.append(item.model_copy(update={"prompt": prompt}))
            resolved[item.key] = defect.model_copy(update={"resolution": "repaired"})
        elif drop:
            resolved[item.key] = defect.model_copy(update={"resolution": "dropped"})
        else:
            kept.append(item)
            resolved[item.key] = defect
    return kept, [resolved[k] for k in by_key]


def _select(
    items: list[Item], defects: list[Defect], benchmarks: Sequence[str], path: Path
) -> tuple[list[Item], list[Defect]]:
    available = list(dict.fromkeys(i.benchmark for i in items))
    unknown = [b for b in benchmarks if b not in available]
    if unknown:
        raise ConfigError(
            f"{path}: unknown benchmark(s) {', '.join(unknown)}; available: {', '.join(available)}"
        )
    wanted = set(benchmarks)
    return [i for i in items if i.benchmark in wanted], [d for d in defects if d.benchmark in wanted]


def content_hash(items: list[Item]) -> str:
    """sha256 of the loaded items as the run key takes them (giant.eval.resume)."""
    payload = json.dumps([i.model_dump(mode="json") for i in items], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()
