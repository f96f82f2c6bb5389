"""A run with the CONCH tool is its own row ("+ CONCH") and is compared with the published Table 3 row."""

from __future__ import annotations

from giant.tracking.published import tool_ablations
from giant.tracking.tables.rows import RunRecord, build_table
from giant.tracking.tables.versus_paper import comparison_markdown


def record(task: str, mean: float, tools: tuple[str, ...] = ()) -> RunRecord:
    return RunRecord(
        run_id=f"{task}-{mean}",
        task=task,
        agent_mode="giant",
        model="gpt-5",
        settings={"max_steps": 20, "crop_size": 1000},
        tools=tools,
        mean=mean,
        std=0.02,
    )


def test_a_conch_run_gets_the_plus_conch_row_and_table_3() -> None:
    table = build_table(
        [record("gtex", 0.55), record("gtex", 0.65, ("conch",)), record("tcga", 0.25, ("conch",))]
    )
    assert [(row.method, sorted(row.cells)) for row in table.rows] == [
        ("giant", ["gtex"]),
        ("giant + CONCH", ["gtex", "tcga"]),
    ]
    text = comparison_markdown(table)
    lines = text.splitlines()
    paper = lines[lines.index("| giant + CONCH | gpt-5 | 25.0 ± 2.0 | 65.0 ± 2.0 | - | - | - |") + 1]
    assert paper == "| paper: GIANT x1 + CONCH (T=20, S=1000) | gpt-5 | 22.0 | 63.8 | 25.5 | 54.3 | 60.9 |"
    assert "| difference (points) |  | +3.0 | +1.2 | - | - | - |" in lines
    base = "| paper: GIANT x1 (T=20, S=1000) | gpt-5 | 32.3 ± 3.5 | 53.7 ± 3.4 | 23.2 ± 2.3 | 58.9 ± 3.5 |"
    assert base + " 57.0 ± 4.5 |" in lines  # the run without the tool keeps its Table 1 row
    assert "| GIANT x1 + CONCH | 22.0 | 63.8 | 25.5 | 54.3 | 60.9 |" in lines  # the published Table 3
    ablation = tool_ablations()["conch"]  # published rows are data keyed by the tool's registered name
    assert (ablation.without["gtex"], ablation.with_tool["gtex"]) == (53.7, 63.8)


def test_a_conch_run_at_other_settings_has_no_published_row() -> None:
    other = record("gtex", 0.6, ("conch",)).model_copy(
        update={"settings": {"max_steps": 10, "crop_size": 1000}}
    )
    text = comparison_markdown(build_table([other]))
    assert "paper: GIANT x1 + CONCH" not in text and "no run of ours uses a published configuration" in text
