"""Job folders written before patch answers became a list still read, and re-score, the same: their
lines kept the patch answers as JSON text in `prediction` (giant.record.results converts on read)."""

from __future__ import annotations

from pathlib import Path

import pytest

from giant.config import RunOptions, shipped
from giant.core import Item
from giant.eval.rescore_records import rescore_records
from giant.record import JobLayout, ResultRecord, ResultsWriter, read_results

# Two results.jsonl lines exactly as the runner wrote them before `answers` (a patch-mode item whose
# patches answered null, 2 and nothing; a single-answer item), copied byte for byte.
OLD_LINES = (
    '{"input_tokens":0,"output_tokens":0,"reasoning_tokens":0,"cached_input_tokens":0,'
    '"cache_write_tokens":0,"calls_replayed":0,"replayed_cost_usd":0.0,"key":"panda/1",'
    '"benchmark":"panda","run_index":0,"seed":11,'
    '"prediction":"[\\"{\\\\\\"isup_grade\\\\\\": null}\\", \\"{\\\\\\"isup_grade\\\\\\": 2}\\", null]",'
    '"label":0,"method":"patch_vote","patch_labels":[0,2,null],"truth":2,"correct":false,'
    '"status":"answered","reason":"","cause":null,"calls":3,"steps":2,"crops":3,"dollars":0.01,'
    '"seconds":1.5,"trajectory":"trajectories/panda__1/run0"}\n'
    '{"input_tokens":0,"output_tokens":0,"reasoning_tokens":0,"cached_input_tokens":0,'
    '"cache_write_tokens":0,"calls_replayed":0,"replayed_cost_usd":0.0,"key":"panda/2",'
    '"benchmark":"panda","run_index":0,"seed":12,"prediction":"{\\"isup_grade\\": 3}","label":3,'
    '"method":"response_json","patch_labels":null,"truth":3,"correct":true,"status":"answered",'
    '"reason":"","cause":null,"calls":1,"steps":1,"crops":0,"dollars":0.0,"seconds":0.5,'
    '"trajectory":null}\n'
)
PATCHES = ['{"isup_grade": null}', '{"isup_grade": 2}', None]
ITEMS = [
    Item(benchmark="panda", benchmark_id=n, image_path=f"{n}.svs", prompt="?", truth=t, metric="accuracy")
    for n, t in (("1", 2), ("2", 3))
]


@pytest.fixture
def old_job(tmp_path: Path) -> Path:
    out = tmp_path / "old"
    out.mkdir()
    JobLayout(out).results.write_text(OLD_LINES, encoding="utf-8")
    return out


def test_an_old_patch_line_reads_as_a_list_of_answers(old_job: Path) -> None:
    patch, single = read_results(JobLayout(old_job).results)
    assert (patch.prediction, patch.answers, patch.patch_labels) == (None, PATCHES, [0, 2, None])
    assert (single.prediction, single.answers) == ('{"isup_grade": 3}', None)


@pytest.mark.parametrize(("null_as_zero", "patch_label"), [(True, 0), (False, 2)])
def test_an_old_folder_rescores_as_a_new_one(
    old_job: Path, tmp_path: Path, null_as_zero: bool, patch_label: int
) -> None:
    """The numbers the old rescore gave: nulls as 0 tie 0-2 (0 first), else the one grade, 2."""
    old = read_results(JobLayout(old_job).results)
    new_layout = JobLayout(tmp_path / "new")
    with ResultsWriter(new_layout.results) as writer:
        for record in old:
            writer.append(record)
    new = read_results(new_layout.results)
    assert new == old and '"answers":' in new_layout.results.read_text()
    scoring = shipped(RunOptions).scoring.model_copy(update={"panda_null_as_zero": null_as_zero})
    again = [rescore_records(records, ITEMS, scoring) for records in (old, new)]
    assert again[0] == again[1]
    outcome = [(r.label, r.correct, r.status, r.patch_labels) for r in again[0]]
    patch_labels = [0, 2, None] if null_as_zero else [None, 2, None]
    assert outcome == [(patch_label, patch_label == 2, "answered", patch_labels), (3, True, "answered", None)]


def test_a_record_keeps_patch_answers_as_a_list() -> None:
    record = ResultRecord(
        key="panda/1", benchmark="panda", run_index=0, seed=0, truth=2, status="answered", answers=PATCHES
    )
    assert ResultRecord.model_validate_json(record.model_dump_json()).answers == PATCHES
