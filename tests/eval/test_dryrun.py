"""The dry run on real slides: missing and unreadable ones listed, cost estimated without a provider."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import giant
from giant.agent.modes import parse_agent
from giant.core import Item
from giant.eval.dryrun import DryRunReport, dry_run
from giant.llm.config import ProviderSettings, provider_settings
from giant.llm.pricing import Pricing, Rates
from giant.record import DRY_RUN_FILE
from tests.eval.runner_fixtures import make_items, write_slides

PRICING = Pricing({"gpt-5": Rates(input=1.25, cached_input=0.125, cache_write=0.0, output=10.0)})
GPT5 = provider_settings("openai", model="gpt-5")


@pytest.fixture
def dataset(tmp_path: Path, openslide_fixtures: Path) -> tuple[Path, list[Item]]:
    root = write_slides(tmp_path / "wsi", ["a.svs", "b.svs"])
    shutil.copy(openslide_fixtures / "unreadable.svs", root / "broken.svs")
    items = make_items(4, ["a.svs", "b.svs", "gone.svs", "broken.svs"])
    items += make_items(2, ["a.svs"], benchmark="other")
    return root, items


def test_dry_run_lists_missing_and_unreadable_slides_and_writes_json(
    dataset: tuple[Path, list[Item]], tmp_path: Path
) -> None:
    root, items = dataset
    agent = parse_agent({"mode": "giant", "max_steps": 10, "crop_size": 1000})
    report = dry_run(
        items,
        wsi_root=root,
        agent=agent,
        provider=GPT5,
        pricing=PRICING,
        runs_per_item=1,
        out_dir=tmp_path,
    )
    assert report.items_per_task == {"demo": 4, "other": 2}
    assert [p.key for p in report.missing] == ["demo/2"]
    assert [p.key for p in report.unreadable] == ["demo/3"]
    assert "broken.svs" in report.unreadable[0].reason
    assert report.runnable_items == 4
    assert DryRunReport.model_validate_json((tmp_path / DRY_RUN_FILE).read_text()) == report
    est = report.estimate
    assert est.tokens_per_image == 765 and est.calls_per_item_run == 10
    assert est.cost_usd == pytest.approx((est.input_tokens * 1.25 + est.output_tokens * 10.0) / 1e6)
    assert est.cost_per_item_run_usd == pytest.approx(est.cost_usd / 6)  # every item, slide or not
    rendered = report.render()
    assert "demo/2" in rendered and "demo/3" in rendered and "$" in rendered


def test_estimate_grows_quadratically_with_steps_and_linearly_with_runs(
    dataset: tuple[Path, list[Item]],
) -> None:
    root, items = dataset

    def estimate(steps: int, runs: int = 1, provider: ProviderSettings = GPT5, crop: int = 1000):
        agent = parse_agent({"mode": "giant", "max_steps": steps, "crop_size": crop})
        return dry_run(
            items, wsi_root=root, agent=agent, provider=provider, pricing=PRICING, runs_per_item=runs
        ).estimate

    five, ten = estimate(5), estimate(10)
    assert ten.input_tokens > 3.5 * five.input_tokens  # resending every image: ~ T^2, not T
    assert ten.output_tokens == 2 * five.output_tokens
    assert estimate(5, runs=3).input_tokens == 3 * five.input_tokens
    claude = estimate(5, provider=provider_settings("anthropic", model="claude-sonnet-4-5"), crop=500)
    assert claude.image_formula == "anthropic" and claude.tokens_per_image == 334
    assert claude.cost_usd is None  # not in this price table: unknown, never a guess
    thumbnail = dry_run(
        items,
        wsi_root=root,
        agent=parse_agent({"mode": "thumbnail"}),
        provider=GPT5,
        pricing=PRICING,
        runs_per_item=1,
    ).estimate
    assert thumbnail.calls_per_item_run == 1 and thumbnail.input_tokens < five.input_tokens


def test_dry_run_names_the_layout_of_each_slide_and_lists_duplicates(
    dataset: tuple[Path, list[Item]], tmp_path: Path
) -> None:
    root, items = dataset
    (root / "demo").mkdir()
    shutil.copyfile(root / "a.svs", root / "demo" / "a.svs")  # a second copy, found later in the order
    (root / "b.svs").rename(root / "b.tiff")  # the CSV says b.svs
    report = dry_run(
        items,
        wsi_root=root,
        agent=parse_agent({"mode": "giant", "max_steps": 3}),
        provider=GPT5,
        pricing=PRICING,
        runs_per_item=1,
        out_dir=tmp_path,
    )
    assert report.layouts == {"flat": 2, "other_extension": 1}  # a.svs, broken.svs; b.tiff
    rows = {row.image_path: row for row in report.slides}
    assert (rows["a.svs"].layout, rows["a.svs"].duplicates) == ("flat", [root / "demo" / "a.svs"])
    assert (rows["b.svs"].layout, rows["b.svs"].path) == ("other_extension", root / "b.tiff")
    assert rows["gone.svs"].status == "missing" and rows["gone.svs"].layout is None
    saved = json.loads((tmp_path / DRY_RUN_FILE).read_text())
    assert saved["layouts"] == report.layouts
    assert {row["image_path"]: row["layout"] for row in saved["slides"]}["b.svs"] == "other_extension"
    text = report.render()
    assert "found as: flat 2, other_extension 1" in text
    assert f"duplicate a.svs: using {root / 'a.svs'} (flat), also at {root / 'demo' / 'a.svs'}" in text


def test_cli_dry_run_finds_the_authors_layout_and_a_gdc_download(
    tmp_path: Path, openslide_fixtures: Path, multipathqa_csv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first three tcga_expert_vqa questions of the real CSV (two share a slide): one slide where
    the authors' downloader puts it, one where the GDC Data Transfer Tool puts it. The dry run of
    scripts/run_eval.py, run in-process (giant.evaluate)."""
    wsi = tmp_path / "wsi"
    benchmark_copy = wsi / "tcga_expert_vqa" / "TCGA-HT-A616-01Z-00-DX1.svs"
    gdc_copy = (
        wsi
        / "70b2adae-cba0-47d6-8b98-5bdcef82421d"
        / "TCGA-08-0520-01Z-00-DX1.a44d70fa-4d96-43f4-9dd7-a61535786297.svs"
    )
    for target in (benchmark_copy, gdc_copy):
        target.parent.mkdir(parents=True)
        shutil.copyfile(openslide_fixtures / "small.svs", target)
    summary = giant.evaluate(
        ["dataset=tcga_expert_vqa", f"dataset.csv_path={multipathqa_csv}", f"paths.wsi_root={wsi}",
         f"paths.cache_dir={tmp_path / 'cache'}", "limit=3", "dry_run=true"],
        output_dir=tmp_path / "out",
    )  # fmt: skip
    assert summary is None  # a dry run
    printed = capsys.readouterr().out
    assert "3 items ready, 0 missing" in printed
    assert "found as: benchmark 1, gdc_transfer 1" in printed
    (saved,) = (tmp_path / "out").rglob(DRY_RUN_FILE)
    report = DryRunReport.model_validate_json(saved.read_text())
    assert {row.layout: row.path for row in report.slides} == {
        "benchmark": benchmark_copy,
        "gdc_transfer": gdc_copy,
    }
