"""Navigation and evidence on the demo, the jobs run in-process (giant.evaluate, the job of
scripts/run_eval.py), the re-score, comparison and tables through the real CLI: the demo slides'
painted markers are their annotations (GeoJSON). A scripted model that crops every slide's first
marker (one crop per slide, so each episode crops its own marker once) hits on every item; the
random-regions ablation does not; both are MLflow metrics of their runs. A job run without
annotations, re-scored with them added, gets the same hit rate from its trajectories with no provider
(the script is gone by then)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from giant.compare.stats import mcnemar_exact
from giant.data.demo import SLIDES, build_demo, markers
from giant.tracking.names import CI_HIGH_SUFFIX, NAVIGATION_METRIC_PREFIX
from tests.browser import open_page, serve
from tests.compare.conftest import COMPARE
from tests.helpers.cli import MAKE_TABLES, Env, clean_env

HIT_RATE = f"{NAVIGATION_METRIC_PREFIX}hit_rate"
PAD = 18  # a 60 px box around a 24 px marker: 16% of it is marker (hit_overlap 0.1)


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Env:
    tmp = tmp_path_factory.mktemp("navigation")
    env = clean_env(
        "OPENAI_", "ANTHROPIC_", GIANT_CACHE_DIR=str(tmp / "cache"), GIANT_OUTPUT_DIR=str(tmp / "outputs")
    )
    return Env(tmp, env)


def _script(cli: Env) -> Path:
    lines = []
    for index, (shape, count) in enumerate(SLIDES, start=1):
        box = markers(index, shape, count)[0].box
        crop = {"type": "crop", "x": box.x - PAD, "y": box.y - PAD, "width": 60, "height": 60}
        lines.append({"reasoning": f"the marker of slide {index}", "action": crop})
    lines.append({"reasoning": "seen", "action": {"type": "answer", "text": "circle"}})
    path = cli.tmp / "markers.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _job(cli: Env, name: str, *args: str) -> tuple[dict, dict[str, float]]:
    folder = cli.tmp / name
    run_id = cli.evaluate(folder, *args, "bootstrap_replicates=100")
    return json.loads((folder / "summary.json").read_text()), cli.client().get_run(run_id).data.metrics


@pytest.fixture(scope="module")
def giant_job(cli: Env) -> tuple[dict, dict[str, float]]:
    # resume=false: on a worker where the unannotated job of the re-score test ran first (same run key),
    # the job would carry its item-runs, scored with no annotations
    return _job(cli, "giant", "provider=scripted", f"provider.script={_script(cli)}", "resume=false")


@pytest.mark.slow
def test_the_demo_hit_rate_is_1_when_the_model_crops_the_markers_and_lower_at_random(
    cli: Env, giant_job: tuple[dict, dict[str, float]]
) -> None:
    summary, metrics = giant_job
    nav = summary["navigation"]
    assert nav["annotated"] == 8 and nav["not_annotated"] == 0
    assert nav["hit_rate"]["point"] == 1.0 and metrics[HIT_RATE] == 1.0
    assert nav["finest_mpp"] == 0.25 and nav["fine_rate"] == 1.0  # a 60 px box is shown as it is
    assert nav["hit_rate_by_step"][-1] == 1.0 and nav["hit_rate_by_step"][0] < 1.0  # one marker per step
    answer = cli.tmp / "answer.jsonl"
    answer.write_text(json.dumps({"reasoning": "r", "action": {"type": "answer", "text": "circle"}}) + "\n")
    rand, rand_metrics = _job(
        cli, "random", "agent=random_regions", "provider=scripted", f"provider.script={answer}"
    )
    assert rand["navigation"]["annotated"] == 8
    assert rand["navigation"]["hit_rate"]["point"] <= 0.5 and rand_metrics[HIT_RATE] <= 0.5
    assert rand_metrics[HIT_RATE + CI_HIGH_SUFFIX] < 1.0  # measurably lower: its interval stays below 1

    out = cli.tmp / "compared"  # compare tests the hit rates pairwise, as it tests accuracy
    cli.run(str(cli.tmp / "giant"), str(cli.tmp / "random"), "--out", str(out), "--no-log", script=COMPARE)
    with (out / "comparison.csv").open() as f:
        [row] = list(csv.DictReader(f))
    assert (row["hit_n"], float(row["hit_rate_a"])) == ("8", 1.0)
    hit_b = float(row["hit_rate_b"])
    b_only = int(row["hit_b_only"])
    assert int(row["hit_a_only"]) == round(8 * (1.0 - hit_b)) + b_only
    assert float(row["hit_mcnemar_p"]) == pytest.approx(
        mcnemar_exact(int(row["hit_a_only"]), b_only), rel=1e-5
    )
    assert "Evidence hit rate" in (out / "comparison.md").read_text()

    tables = cli.tmp / "tables"  # make tables: the methods side by side on the same items
    cli.run("--tracking-uri", cli.uri, "--out", str(tables), "--no-log", script=MAKE_TABLES)
    lines = (tables / "navigation.md").read_text().splitlines()
    giant_row = next(line for line in lines if line.startswith("| giant"))
    random_row = next(line for line in lines if line.startswith("| random_regions"))
    assert giant_row.split(" | ")[1] == "100.0% [100%, 100%]"  # units stated (issue 42)
    assert not random_row.split(" | ")[1].startswith("100.0")
    assert (tables / "navigation.png").stat().st_size > 1000


@pytest.mark.slow
def test_annotations_added_after_the_run_count_in_a_rescore_without_provider_calls(cli: Env) -> None:
    script = _script(cli)
    empty = cli.tmp / "no_annotations"
    empty.mkdir()
    args = (
        "provider=scripted",
        f"provider.script={script}",
        f"dataset.annotations.path={empty}",
        "resume=false",
    )
    before, _ = _job(cli, "unannotated", *args)
    assert before["navigation"]["annotated"] == 0 and before["navigation"]["hit_rate"] is None
    script.unlink()  # a re-score that built the provider, or called it, would fail now
    annotations = build_demo(cli.tmp / "cache" / "demo").annotations
    out = cli.tmp / "rescored"
    cli.rescore(
        out,
        f"source={cli.tmp / 'unannotated'}",
        f"annotations={annotations}",
        "navigation.hit_mpp=0.5",
        f"tracking.uri={cli.uri}",
    )
    after = json.loads((out / "summary.json").read_text())
    assert after["navigation"]["annotated"] == 8 and after["navigation"]["hit_rate"]["point"] == 1.0
    assert after["totals"]["calls"] == before["totals"]["calls"]  # nothing was asked again
    assert after["navigation"]["coverage"] == pytest.approx(before["navigation"]["coverage"])
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert all(r["navigation"]["hit"] is True for r in records)


@pytest.mark.slow
def test_the_pages_draw_the_curves_and_the_annotations_under_the_crop_boxes(
    cli: Env, giant_job: tuple[dict, dict[str, float]], browser: Any
) -> None:  # the job first: Playwright's sync API runs an event loop on this thread while it is open
    folder = cli.tmp / "giant"
    page_path = sorted(folder.glob("trajectories/*/run0/trajectory.html"))[0]
    with serve(folder) as base:
        with open_page(browser, f"{base}/report.html") as opened:
            page = opened.page
            assert page.locator("#by-step polyline.mpp").count() == 1
            assert page.locator("#by-step polyline.hits").count() == 1
            points = page.get_attribute("#by-step polyline.hits", "points") or ""
            assert len(points.split()) == 8  # one point per crop
            assert opened.errors == []
        with open_page(browser, f"{base}/{page_path.relative_to(folder).as_posix()}") as opened:
            page = opened.page
            assert page.locator("svg.overview polygon.annotation").count() >= 1  # the slide's markers
            # under the boxes: every outline comes before the first crop box in the drawing order
            order = page.eval_on_selector_all(
                "svg.overview polygon.annotation, svg.overview rect", "els => els.map(e => e.tagName)"
            )
            assert order.index("rect") > max(i for i, tag in enumerate(order) if tag == "polygon")
            assert opened.errors == []
