"""The predictions table and confusion matrix logged with each job, from the job's result records."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from giant.core import Item
from giant.job import select_items
from giant.record import JobLayout, ResultRecord
from giant.tracking.artifacts import confusion_table, write_confusion_matrix, write_predictions


def _record(key: str, label: int | None, truth: int, run_index: int = 0) -> ResultRecord:
    return ResultRecord(
        key=key,
        benchmark="demo_count",
        run_index=run_index,
        seed=0,
        label=label,
        truth=truth,
        correct=label == truth,
        status="answered" if label is not None else "timeout",
    )


def test_predictions_keep_the_latest_record_and_matrix_counts_failures(tmp_path: Path) -> None:
    layout = JobLayout(tmp_path)
    records = [_record("d/1", None, 2), _record("d/2", 3, 3), _record("d/3", 1, 2), _record("d/1", 2, 2)]
    path = write_predictions(layout, records)
    assert path == layout.predictions
    frame = pd.read_csv(path)
    assert len(frame) == 3  # the resumed d/1 replaces its failed first attempt
    assert frame.set_index("key").loc["d/1", "label"] == 2

    table = confusion_table(pd.DataFrame({"truth": [2, 3, 2, 5], "label": [2, 3, 1, None]}))
    assert list(table.columns) == ["1", "2", "3", "5", "none"]
    assert table.loc["2", "2"] == 1 and table.loc["2", "1"] == 1 and table.loc["5", "none"] == 1
    assert int(table.to_numpy().sum()) == 4
    png = write_confusion_matrix(layout, records, title="demo_count")
    assert png == layout.confusion_matrix and Image.open(png).format == "PNG"
    assert write_confusion_matrix(layout, [], title="demo_count") is None


def test_predictions_write_a_formula_in_a_reason_as_text(tmp_path: Path) -> None:
    """A failure's reason can quote the model or the server: a spreadsheet must not run it (OWASP)."""
    hostile = '=HYPERLINK("http://attacker.example","open")'
    records = [
        _record("d/1", None, 2).model_copy(update={"reason": hostile}),
        _record("d/2", 2, 2).model_copy(update={"reason": "-12"}),
    ]
    frame = pd.read_csv(write_predictions(JobLayout(tmp_path), records), dtype=str)
    assert list(frame["reason"]) == ["'" + hostile, "-12"]  # a number stays a number
    assert list(frame["truth"]) == ["2", "2"]  # numbers are written as before


def _items() -> list[Item]:
    return [
        Item(
            benchmark="t",
            benchmark_id=str(i),
            image_path="a.svs",
            prompt="q",
            options=("a", "b"),
            truth=1,
            metric="accuracy",
        )
        for i in range(5)
    ]


def test_select_items_by_id_then_limit() -> None:
    assert [i.benchmark_id for i in select_items(_items(), limit=2, item_ids=None)] == ["0", "1"]
    chosen = select_items(_items(), limit=None, item_ids=["t/3", "1"])
    assert [i.key for i in chosen] == ["t/1", "t/3"]  # dataset order, keys or bare ids


def test_unknown_item_ids_name_the_loaded_benchmark() -> None:
    from giant.errors import ConfigError

    with pytest.raises(
        ConfigError, match=r"other/1 not among the loaded items \(benchmark t\).*dataset.benchmark"
    ):
        select_items(_items(), limit=None, item_ids=["other/1"])
