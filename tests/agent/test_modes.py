"""A mode is one registered class (plus its conf/agent YAML): a mode defined here, in the test alone,
runs through run_episode, the dry run's estimate, run naming and Table 1 without any other module
knowing its name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from hydra import compose, initialize_config_dir

from giant.agent.baselines import Asked, ask_for_answer
from giant.agent.config import RegionsConfig
from giant.agent.context import Context
from giant.agent.episode_state import EpisodeState, RetryCounter
from giant.agent.loop import image_part, overview
from giant.agent.modes import MODES, CallPlan, Mode, modes_with_setting
from giant.agent.shipped import shipped_agent
from giant.config import CONF_DIR, RunSettings
from giant.core import Item
from giant.eval.dryrun import estimate_cost
from giant.llm.config import provider_settings
from giant.llm.pricing import Pricing, Rates
from giant.llm.types import TextPart
from giant.registry import register, unregister
from giant.roles import Method
from giant.tracking.mlflow_logger import run_name
from giant.tracking.tables.formats import to_markdown
from giant.tracking.tables.rows import RunRecord, build_table
from tests.agent.conftest import answer, run, scripted


class GlanceConfig(RegionsConfig):
    mode: Method[Literal["glance"]]
    glance_hint: Method[bool] = False  # a setting only this mode has (a library mode has no conf/ file)


def glance_settings(**changes: object) -> dict[str, object]:
    """A mode registered by library code has no conf/ file: its shared settings are giant's."""
    shared = {key: value for key, value in shipped_agent("giant").items() if key in GlanceConfig.model_fields}
    return {**shared, "mode": "glance", **changes}


class GlanceMode(Mode[GlanceConfig]):
    """Answer from the overview alone, in one call."""

    name = "glance"
    settings = GlanceConfig
    table_rank = 5
    row_settings = ("crop_size",)

    async def run(self, ep: EpisodeState[GlanceConfig]) -> None:
        first = await overview(ep)
        ep.add_region(0, first)
        ctx = Context(system=None)
        ctx.add_user([TextPart(text=ep.item.prompt), image_part(first, "overview")])
        text = await ask_for_answer(ep, ctx, RetryCounter(ep.cfg.max_retries), Asked())
        ep.steps += 1
        ep.answered(text, budget_forced=False)

    def plan(self, cfg: GlanceConfig) -> CallPlan:
        return CallPlan(calls=1, image_side=cfg.crop_size, conversation=False)

    def run_name(self, cfg: GlanceConfig, dataset: str) -> str:
        return f"{dataset}-glance-S{cfg.crop_size}"


@pytest.fixture
def glance() -> Iterator[Mode[GlanceConfig]]:
    register("mode")(GlanceMode)
    yield MODES["glance"]
    unregister("mode", "glance")


def test_a_mode_defined_in_one_class_runs_everywhere(
    glance: Mode[GlanceConfig], tmp_path: Path, item: Item, slide_path: Path
) -> None:
    provider = scripted(tmp_path, [answer(3)])
    traj = run(item, slide_path, provider, tmp_path / "out", **glance_settings(crop_size=500))
    assert (traj.mode, traj.status, traj.answer) == ("glance", "answered", '{"answer": 3}')
    assert len(traj.calls) == 1 and len(traj.regions) == 1
    assert max(traj.regions[0].output_width, traj.regions[0].output_height) == 500

    cfg = GlanceConfig.model_validate(glance_settings(crop_size=500))
    pricing = Pricing({"gpt-5": Rates(input=1.0, cached_input=0.1, cache_write=0.0, output=10.0)})
    estimate = estimate_cost([item], {}, cfg, provider_settings("openai", model="gpt-5"), pricing, 2)
    assert estimate.calls_per_item_run == 1

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        settings = RunSettings.from_config(compose("config", overrides=["dry_run=true"]))
    assert run_name(settings.model_copy(update={"agent": cfg}), "tcga") == "tcga-glance-S500"
    assert modes_with_setting("glance_hint") == ["glance"]

    records = [
        RunRecord(
            run_id=str(s),
            task="tcga",
            agent_mode="glance",
            model="m",
            settings={"crop_size": s},
            mean=0.5,
            std=0.1,
        )
        for s in (500, 1000)
    ]
    lines = to_markdown(build_table(records)).splitlines()
    assert [line.split(" | ")[0] for line in lines[2:]] == ["| glance (S=500)", "| glance (S=1000)"]


def test_every_shipped_mode_has_its_yaml_and_the_reverse() -> None:
    """conf/agent/<mode>.yaml is the other half of a mode: the two lists match."""
    assert {path.stem for path in (CONF_DIR / "agent").glob("*.yaml")} == set(MODES)
