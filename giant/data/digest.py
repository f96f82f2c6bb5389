"""Which version of a task's questions a run scored: a digest of its normalized items.

Datasets get revised under the same name (SlideChat's 81.2% became 74.1% on a re-reviewed question set,
GIANT_FACTS §11), so every run records a digest of what it scored: per task, over each question's text,
options, answer and slide file name, in a fixed order. The digest ignores where the file or the slides
lie, the file's format (CSV or JSONL, MultiPathQA's columns or the task format) and the row order, and
changes with any question, option, answer or slide. The tables and comparisons warn when the runs they
put side by side scored different versions of a task.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath

from pydantic import BaseModel

from giant.core import Item

DIGEST_CHARS = 16  # hex characters kept (64 bits), as the config hash; fits MLflow's dataset digest

# The digests of MultiPathQA.csv as published (tbuckley/MultiPathQA on the Hugging Face Hub, 934 rows),
# per task as loaded with the defective tcga_slidebench rows kept: a run of a published task says so.
PUBLISHED_SOURCE = "MultiPathQA.csv (tbuckley/MultiPathQA, as published)"
PUBLISHED: dict[str, str] = {
    "gtex": "a79d0ccd39f54a6e",
    "panda": "5e018a51f3105979",
    "tcga": "a50f39e183a7577d",
    "tcga_expert_vqa": "5c81ee447c263f20",
    "tcga_slidebench": "febf2ae04194fcb2",
}


class DatasetDigests(BaseModel):
    """What summary.json, the MLflow tag and the MLflow input dataset say about a job's questions."""

    source: str  # the file's name (MultiPathQA.csv, my_cohort.csv)
    location: str  # where it was read: a path, or hf://datasets/<repo>/<file>
    digest: str  # dataset_digest(tasks)
    tasks: dict[str, str]  # task -> its digest
    published: str | None = None  # the published dataset's name, when the digests are its own

    @classmethod
    def of(cls, items: Iterable[Item], *, location: str) -> DatasetDigests:
        tasks = task_digests(items)
        return cls(
            source=PurePosixPath(location.replace("\\", "/")).name,
            location=location,
            digest=dataset_digest(tasks),
            tasks=tasks,
            published=published_name(tasks),
        )

    @property
    def name(self) -> str:
        """The input dataset's name in MLflow: the published name, or the file's name."""
        return self.published or self.source


def task_digests(items: Iterable[Item]) -> dict[str, str]:
    """task -> digest of its items (sorted by task name)."""
    by_task: dict[str, list[list[object]]] = {}
    for item in items:
        by_task.setdefault(item.benchmark, []).append(_normalized(item))
    return {task: _digest(sorted(rows, key=_key)) for task, rows in sorted(by_task.items())}


def dataset_digest(digests: Mapping[str, str]) -> str:
    """One digest for a job's tasks: the task's own when there is one, else over every (task, digest)."""
    if len(digests) == 1:
        return next(iter(digests.values()))
    return _digest(sorted(digests.items()))


def published_name(digests: Mapping[str, str]) -> str | None:
    """The published dataset's name when every task's digest is the published one."""
    if digests and all(PUBLISHED.get(task) == digest for task, digest in digests.items()):
        return PUBLISHED_SOURCE
    return None


def _normalized(item: Item) -> list[object]:
    return [
        " ".join(item.prompt.split()),
        [" ".join(option.split()) for option in item.options],
        item.truth,
        PurePosixPath(item.image_path.replace("\\", "/")).name,
    ]


def _key(row: list[object]) -> str:
    return json.dumps(row, ensure_ascii=False)


def _digest(data: object) -> str:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_CHARS]
