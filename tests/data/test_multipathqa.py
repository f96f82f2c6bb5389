"""The loader on the real MultiPathQA.csv and on small hand-written CSVs in its format."""

from __future__ import annotations

import csv
import re
from collections import Counter
from pathlib import Path

import pytest

from giant.data.multipathqa import CSV_COLUMNS, HubFile, load_multipathqa
from giant.errors import ConfigError

DEFECT_IDS = {"17", "44", "45", "51", "52", "63", "70", "76", "102", "120"}


def write_csv(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({c: row.get(c, "True") for c in CSV_COLUMNS})
    return path


def row(**fields: str) -> dict[str, str]:
    base = {
        "benchmark_name": "demo_x",
        "benchmark_id": "1",
        "image_path": "a.svs",
        "answer": "2",
        "options": "['Alpha', 'Beta, with comma']",
        "metric_type": "accuracy",
        "file_id": "f1",
        "prompt": "Which one?",
    }
    return base | fields


@pytest.fixture(scope="module")
def real(multipathqa_csv: Path):
    return load_multipathqa(multipathqa_csv)


def test_csv_columns_are_the_released_header(multipathqa_csv: Path) -> None:
    """The demo CSV and the test CSVs are written with CSV_COLUMNS: it must be the real file's header."""
    with multipathqa_csv.open(newline="") as f:
        assert tuple(next(csv.reader(f))) == CSV_COLUMNS


def test_real_csv_counts_and_labels(real) -> None:
    counts = Counter(item.benchmark for item in real.items)
    assert len(real.items) == 934
    assert counts == {"tcga": 221, "gtex": 191, "panda": 197, "tcga_slidebench": 197, "tcga_expert_vqa": 128}
    for item in real.items:
        valid = range(1, len(item.options) + 1) if item.options else range(0, 6)
        assert item.truth in valid, item.key
    assert {len(i.options) for i in real.items if i.benchmark == "tcga"} == {30}
    assert {len(i.options) for i in real.items if i.benchmark == "gtex"} == {20}
    assert {i.metric for i in real.items if i.benchmark in ("tcga", "gtex", "panda")} == {"balanced_accuracy"}
    assert {i.metric for i in real.items if i.benchmark.startswith("tcga_")} == {"accuracy"}
    assert len({i.key for i in real.items}) == 934


def test_real_csv_prompts_fully_rendered(real) -> None:
    for item in real.items:
        assert "{options}" not in item.prompt and "{{" not in item.prompt and "}}" not in item.prompt, (
            item.key
        )
        # the only braces left are the JSON answer example the prompt shows the model
        leftovers = re.sub(r"\{[^{}]*\}", "", item.prompt)
        assert "{" not in leftovers and "}" not in leftovers, item.key
        for n, option in enumerate(item.options, start=1):
            assert f"\n{n}. {option}" in item.prompt, item.key
        if item.options:
            assert '{"answer": YOUR_ANSWER}' in item.prompt, item.key
    panda = next(i for i in real.items if i.benchmark == "panda")
    assert '"isup_grade": ISUP_GRADE_NUMBER' in panda.prompt and panda.options == ()
    vqa = next(i for i in real.items if i.key == "tcga_slidebench/2270")
    assert vqa.prompt.startswith("What is the secondary Gleason pattern")
    assert "Select from the following options:\n1. 2\n2. 3\n3. 4\n4. 5\n" in vqa.prompt
    assert vqa.truth == 3


def test_real_gtex_truth_is_the_organ_index(real) -> None:
    item = next(i for i in real.items if i.key == "gtex/GTEX-OIZH-0626")
    assert item.options[item.truth - 1] == "Esophagus"


def test_real_defects_reported(real) -> None:
    assert {d.benchmark_id for d in real.defects} == DEFECT_IDS
    assert {d.benchmark for d in real.defects} == {"tcga_slidebench"}
    assert {d.resolution for d in real.defects} == {"kept"}


def test_real_defects_repaired_from_slidebench_small(multipathqa_csv: Path, real) -> None:
    fixed = load_multipathqa(multipathqa_csv, slidebench_fix=multipathqa_csv.parent / "slidebench_small.csv")
    assert len(fixed.items) == 934
    assert {d.resolution for d in fixed.defects} == {"repaired"}
    expert = {i.benchmark_id: i for i in fixed.items if i.benchmark == "tcga_expert_vqa"}
    for item in fixed.items:
        if item.benchmark == "tcga_slidebench" and item.benchmark_id in DEFECT_IDS:
            assert item.prompt.split("\n")[0] != expert[item.benchmark_id].prompt.split("\n")[0]
    repaired = next(i for i in fixed.items if i.key == "tcga_slidebench/17")
    assert repaired.prompt.startswith("Based on the examination of the provided whole slide image")
    assert fixed.content_hash != real.content_hash


def test_real_defects_dropped(multipathqa_csv: Path) -> None:
    dropped = load_multipathqa(multipathqa_csv, benchmarks=["tcga_slidebench"], drop_defective=True)
    assert len(dropped.items) == 187
    assert not {i.benchmark_id for i in dropped.items} & DEFECT_IDS
    assert {d.resolution for d in dropped.defects} == {"dropped"}


def test_benchmark_selection_and_hash(multipathqa_csv: Path, real) -> None:
    gtex = load_multipathqa(multipathqa_csv, benchmarks=["gtex"])
    assert len(gtex.items) == 191 and gtex.defects == []
    assert gtex.content_hash != real.content_hash
    assert load_multipathqa(multipathqa_csv).content_hash == real.content_hash
    with pytest.raises(ConfigError, match=r"unknown benchmark.*tgca"):
        load_multipathqa(multipathqa_csv, benchmarks=["tgca"])


def test_generic_benchmark_and_vqa_wrapper(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.csv", [row(prompt="Which one?\nThink.", answer="Beta, with comma")])
    data = load_multipathqa(path)
    (item,) = data.items
    assert item.benchmark == "demo_x" and item.truth == 2 and item.options == ("Alpha", "Beta, with comma")
    assert item.prompt.startswith("Which one?\nThink.\n\nSelect from the following options:\n1. Alpha\n")
    assert data.source == str(path)


def test_template_row_is_formatted(tmp_path: Path) -> None:
    prompt = 'Pick:\n{options}\nAnswer as {{"answer": N}}'
    (item,) = load_multipathqa(write_csv(tmp_path / "d.csv", [row(prompt=prompt)])).items
    assert item.prompt == 'Pick:\n1. Alpha\n2. Beta, with comma\nAnswer as {"answer": N}'


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"answer": "5"}, r"data row 2 \(demo_x/1\): answer 5 is outside the valid labels 1..2"),
        ({"answer": "Gamma"}, r"data row 2 \(demo_x/1\): answer 'Gamma' is neither"),
        ({"options": "", "answer": "6"}, r"answer 6 is outside the valid labels 0..5"),
        ({"options": "['a', "}, r"options is not a Python list literal"),
        ({"metric_type": "f1"}, r"metric_type 'f1' is not one of"),
        ({"prompt": "Pick {choice} from {options}"}, r"prompt is not a valid template"),
    ],
)
def test_bad_rows_name_the_row(tmp_path: Path, fields: dict[str, str], message: str) -> None:
    path = write_csv(tmp_path / "d.csv", [row(benchmark_id="0"), row(**fields)])
    with pytest.raises(ConfigError, match=message):
        load_multipathqa(path)


def test_duplicate_keys_and_missing_columns(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="duplicate question key demo_x/1"):
        load_multipathqa(write_csv(tmp_path / "d.csv", [row(), row()]))
    (tmp_path / "bad.csv").write_text("benchmark_name,answer\nx,1\n")
    with pytest.raises(ConfigError, match="missing column"):
        load_multipathqa(tmp_path / "bad.csv")
    with pytest.raises(ConfigError, match=r"dataset\.csv_path: file not found"):
        load_multipathqa(tmp_path / "nope.csv")


def test_offline_download_fails_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ConfigError) as info:
        load_multipathqa(HubFile("tbuckley/MultiPathQA", "MultiPathQA.csv", tmp_path / "hf"))
    message = str(info.value)
    assert "\n" not in message and "pass dataset.csv_path=" in message
