"""The dry run's forecast: each provider's caching rule, low / expected / high per task, and the pilot
forecast from the finished item-runs of an earlier run with the same run key."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import giant
from giant.agent.modes import parse_agent
from giant.eval.dryrun import DryRunReport, dry_run
from giant.llm.caching import CacheSplit, Request, Segment
from giant.llm.config import provider_settings
from giant.llm.pricing import Pricing, Rates
from giant.llm.providers.anthropic.provider import AnthropicProvider
from giant.llm.providers.openai.provider import OpenAIProvider
from giant.record import DRY_RUN_FILE, RESULTS_FILE, ResultRecord, ResultsWriter, read_results
from tests.eval.runner_fixtures import make_items

PRICING = Pricing(
    {
        "gpt-5": Rates(input=1.25, cached_input=0.125, cache_write=1.25, output=10.0),
        "claude-sonnet-4-5": Rates(input=3.0, cached_input=0.3, cache_write=3.75, output=15.0),
    }
)


def test_openai_reads_the_shared_prefix_from_1024_tokens_in_128_token_steps() -> None:
    a, b, c = Segment("a", 1000), Segment("b", 100), Segment("c", 500)
    requests = [
        Request((a,), 0),
        Request((a, b), 1),  # shares 1000 tokens: below 1024, nothing cached
        Request((a, b, c), 2),  # shares 1100 with the one before: 1024
        Request((a, b, c, Segment("d", 10)), 3),  # shares 1600: 1536
        Request((Segment("a2", 1000), b, c), 2),  # another first segment: a miss
        Request((a, b, Segment("e", 500)), 2),  # shares 1100 with an earlier request, not the last one
    ]
    reads = [split.read for split in OpenAIProvider.cache_rule(requests, True)]
    assert reads == [0, 0, 1024, 1536, 0, 1024]
    assert {split.write for split in OpenAIProvider.cache_rule(requests, True)} == {0}  # no surcharge


def test_anthropic_reads_up_to_a_breakpoint_written_before_and_writes_up_to_its_last() -> None:
    system, question = Segment("system", 2000, breakpoint=True), Segment("question", 100)
    first = Request((system, question, Segment("image 1", 1500, breakpoint=True)), 1)
    second = Request(
        (
            system,
            question,
            Segment("image 1", 1500),
            Segment("answer 1", 400),
            Segment("image 2", 1500, True),
        ),
        4,
    )
    other = Request((system, question, Segment("image 9", 1500, breakpoint=True)), 1)
    splits = AnthropicProvider.cache_rule([first, second, other], True)
    assert splits == [
        CacheSplit(read=0, write=3600),  # a miss: written up to the newest image
        CacheSplit(read=3600, write=1900),  # read up to image 1, where the first call wrote
        CacheSplit(read=2000, write=1600),  # only the system prompt was written at a breakpoint
    ]
    # OpenAI reads the third one's shared 2100 tokens in 128-token steps, breakpoints or not
    assert OpenAIProvider.cache_rule([first, other], True)[1].read == 2048
    assert AnthropicProvider.cache_rule([first, second], False) == [CacheSplit(0, 0)] * 2
    small = Segment("system", 500, breakpoint=True)  # below Anthropic's 1024-token minimum
    assert (
        AnthropicProvider.cache_rule([Request((small,), 0), Request((small, question), 1)], True)
        == [CacheSplit(0, 0)] * 2
    )


@pytest.mark.parametrize(
    ("name", "model", "crop"), [("openai", "gpt-5", 1000), ("anthropic", "claude-sonnet-4-5", 500)]
)
def test_dry_run_prints_low_expected_high_per_task_at_t20(
    tmp_path: Path, name: str, model: str, crop: int
) -> None:
    items = make_items(3, ["a.svs"]) + make_items(2, ["b.svs"], benchmark="other")
    report = dry_run(
        items,
        wsi_root=tmp_path,  # no slides: the estimate covers every item all the same
        agent=parse_agent({"mode": "giant", "max_steps": 20, "crop_size": crop}),
        provider=provider_settings(name, model=model),
        pricing=PRICING,
        runs_per_item=2,
        out_dir=tmp_path,
    )
    est = report.estimate
    assert set(est.per_task) == {"demo", "other"}
    for costs in est.per_task.values():
        assert costs.low_usd is not None and costs.expected_usd is not None and costs.high_usd is not None
        assert costs.low_usd <= costs.expected_usd <= costs.high_usd
        assert costs.expected_usd < 0.5 * costs.high_usd  # caching cuts a T=20 trajectory's cost
    assert est.total.high_usd == pytest.approx(est.cost_usd)  # high is the uncached estimate
    rates = PRICING.rates(model)
    assert rates is not None
    assert est.cost_usd == pytest.approx(
        (est.input_tokens * rates.input + est.output_tokens * rates.output) / 1e6
    )
    assert sum(c.expected_usd or 0 for c in est.per_task.values()) == pytest.approx(est.total.expected_usd)
    saved = DryRunReport.model_validate_json((tmp_path / DRY_RUN_FILE).read_text())
    assert saved.estimate.per_task == est.per_task
    text = report.render()
    for task, costs in est.per_task.items():
        assert f"  {task}: low ${costs.low_usd:,.2f} / expected ${costs.expected_usd:,.2f} / high " in text


def _record(
    key: str, dollars: float | None, status: str = "answered", benchmark: str = "demo"
) -> ResultRecord:
    return ResultRecord(
        key=key, benchmark=benchmark, run_index=0, seed=0, truth=0, status=status, dollars=dollars
    )


def test_pilot_forecast_from_finished_item_runs_contains_the_true_mean(tmp_path: Path) -> None:
    true_mean = 0.12
    costs = np.random.default_rng(7).gamma(shape=2.0, scale=true_mean / 2.0, size=60)
    pilot = tmp_path / "pilot"
    with ResultsWriter(pilot / RESULTS_FILE) as writer:
        for i, dollars in enumerate(costs):
            writer.append(_record(f"demo/{i}", float(dollars)))
        writer.append(_record("demo/60", 0.0, status="skipped"))  # not run yet: says nothing
        writer.append(_record("demo/61", 9.0, status="budget_exceeded"))  # stopped: continues later
        writer.append(_record("demo/62", None))  # no price
        writer.append(_record("gone/0", 5.0, benchmark="gone"))  # a task not in this run
    items = make_items(50, ["a.svs"])
    report = dry_run(
        items,
        wsi_root=tmp_path,
        agent=parse_agent({"mode": "giant", "max_steps": 20}),
        provider=provider_settings("openai", model="gpt-5"),
        pricing=PRICING,
        runs_per_item=2,
        out_dir=tmp_path / "out",
        pilot=pilot,
    )
    assert report.pilot is not None
    (task,) = report.pilot.tasks.values()
    assert list(report.pilot.tasks) == ["demo"] and task.episodes == 60 and task.item_runs == 100
    assert task.forecast_usd == pytest.approx(costs.mean() * 100)
    assert task.ci_low_usd < true_mean * 100 < task.ci_high_usd
    assert task.ci_low_usd < task.forecast_usd < task.ci_high_usd
    assert "based on 60 episodes" in report.render()
    saved = DryRunReport.model_validate_json((tmp_path / "out" / DRY_RUN_FILE).read_text())
    assert saved.pilot == report.pilot


@pytest.mark.slow
def test_cli_dry_run_after_a_pilot_forecasts_from_its_costs(
    tmp_path: Path, openslide_fixtures: Path, multipathqa_csv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real random-provider pilot of 3 items; its results are given dollars (the random provider
    is free), then the dry run of the same config prints the three figures and the pilot forecast.
    Both are the job of scripts/run_eval.py, run in-process (giant.evaluate)."""
    wsi = tmp_path / "wsi" / "tcga_expert_vqa"
    wsi.mkdir(parents=True)
    for name in ("TCGA-HT-A616-01Z-00-DX1.svs", "TCGA-08-0520-01Z-00-DX1.svs"):
        shutil.copyfile(openslide_fixtures / "small.svs", wsi / name)
    prices = tmp_path / "pricing.yaml"  # the price file is not part of the run key
    prices.write_text("models:\n  random: {input: 1.0, cached_input: 0.1, cache_write: 1.0, output: 2.0}\n")
    common = ["dataset=tcga_expert_vqa", f"dataset.csv_path={multipathqa_csv}",
              f"paths.wsi_root={tmp_path / 'wsi'}", f"paths.cache_dir={tmp_path / 'cache'}", "limit=3",
              "agent.max_steps=3", "tracking.enabled=false", f"provider.pricing_file={prices}"]  # fmt: skip

    def run(name: str, *extra: str) -> str:
        capsys.readouterr()
        giant.evaluate([*common, *extra], output_dir=tmp_path / "out" / name)
        return capsys.readouterr().out

    run("pilot")
    (results,) = (tmp_path / "out").rglob(RESULTS_FILE)
    records = read_results(results)
    results.unlink()
    with ResultsWriter(results) as writer:
        for i, record in enumerate(records):
            writer.append(record.model_copy(update={"dollars": 0.1 * (i + 1)}))
    out = run("dry", "dry_run=true")
    assert "with prompt caching (no_caching): low $" in out and " / expected $" in out and " / high $" in out
    assert "tcga_expert_vqa: $0.60 (95% interval" in out and "based on 3 episodes" in out
