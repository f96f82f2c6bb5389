"""Adding a tool touches giant/tools/<name>/ and conf/tools/<name>.yaml only. A real `measure` tool is
written the way a user would (a package and a YAML file, nothing else) into a copy of giant/ and conf/,
and the real CLI (scripts/run_eval.py, a Hydra subprocess with the copy on PYTHONPATH) runs it.

The tool sees its episode through the narrow `ToolContext` (the slide and the fill), never the
episode's state, and its package is imported on the registry's first read (giant.registry)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]

TOOL = '''"""The latest image's region size: a tool added as a user would add it."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, Field

from giant.actions import ActionModel
from giant.core import Box
from giant.roles import Method
from giant.registry import register
from giant.tools import Seen, Tool, ToolContext, ToolRecord


class MeasureSettings(BaseModel):
    unit: Method[str] = Field(description="The unit the reply names.")


class MeasureAction(ActionModel):
    type: Literal["measure"] = "measure"


class MeasureRecord(ToolRecord):
    image: str
    region: Box
    pixels: int
    unit: str


@register("tool")
class MeasureTool(Tool[MeasureSettings, MeasureAction, MeasureRecord]):
    name = "measure"
    settings = MeasureSettings
    action = MeasureAction
    record = MeasureRecord
    description = "Measure the latest image's region."
    hints: ClassVar[dict[str, str]] = {}
    report_title = "Measurements"
    report_note = "the latest image's region."

    def __init__(self, unit: str) -> None:
        self.unit = unit

    @classmethod
    def load(cls, settings: MeasureSettings) -> Self:
        return cls(settings.unit)

    def prompt(self) -> str:
        return "You can also measure your latest image with the measure action."

    async def run(self, ctx: ToolContext, seen: Seen, action: MeasureAction) -> MeasureRecord:
        assert isinstance(ctx, ToolContext) and ctx.fill == "white"
        pixels = seen.box.w * seen.box.h
        return MeasureRecord(
            call_index=seen.call_index, tool=self.name, image=seen.image, region=seen.box, pixels=pixels,
            unit=self.unit,
        )

    def reply(self, record: MeasureRecord) -> str:
        return f"{record.image} covers {record.pixels} {record.unit}."

    @classmethod
    def show(cls, action: MeasureAction) -> list[str]:
        return []

    @classmethod
    def describe(cls, record: MeasureRecord) -> dict[str, Any]:
        return {
            "summary": f"measured {record.image}",
            "model": "arithmetic",
            "image": record.image,
            "target": f"{record.image} {record.region}",
            "rows": [("pixels", str(record.pixels))],
        }
'''
SETTINGS = "unit: px  # the unit the measure tool's reply names\n"  # no `# @package` header needed
STEPS = [
    {"reasoning": "zoom", "action": {"type": "crop", "x": 0, "y": 0, "width": 1500, "height": 1000}},
    {"reasoning": "how big?", "action": {"type": "measure"}},
    {"reasoning": "done", "action": {"type": "answer", "text": '<response>{"answer": 1}</response>'}},
]
ADDED = {"giant/tools/measure/__init__.py", "conf/tools/measure.yaml"}


def _files(root: Path) -> dict[str, str]:
    """Every file of the copy's giant/ and conf/ by path, with its content's hash."""
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for tree in ("giant", "conf")
        for path in sorted((root / tree).rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of giant/, conf/ and the entrypoint with the measure tool added; nothing else edited."""
    root = tmp_path_factory.mktemp("repo")
    for tree in ("giant", "conf"):  # the bytecode too: copied with its sources' times, still valid
        shutil.copytree(ROOT / tree, root / tree)
    (root / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "run_eval.py", root / "scripts")  # its config_path is ../conf
    before = _files(root)
    (root / "giant" / "tools" / "measure").mkdir()
    (root / "giant" / "tools" / "measure" / "__init__.py").write_text(TOOL)
    (root / "conf" / "tools" / "measure.yaml").write_text(SETTINGS)
    after = _files(root)
    assert set(after) - set(before) == ADDED
    assert {path: after[path] for path in before} == before  # no other file of giant/ or conf/ changed
    for entry in ("config", "ask"):  # the entry configs name no tool
        defaults = yaml.safe_load((root / "conf" / f"{entry}.yaml").read_text())["defaults"]
        assert {"tools": "all"} in defaults, entry
        assert not any(name in str(defaults) for name in ("conch", "measure")), entry
    return root


def _run_eval(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    tmp = repo.parent
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIANT_", "MLFLOW_", "HYDRA_"))}
    env.update(
        PYTHONPATH=str(repo),  # the copy's giant, not the installed one
        GIANT_CACHE_DIR=str(tmp / "cache"),
        GIANT_OUTPUT_DIR=str(tmp / "outputs"),
        GIANT_MULTIRUN_DIR=str(tmp / "multirun"),
    )
    script = repo / "scripts" / "run_eval.py"
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=300, cwd=tmp, env=env
    )


def _job(folder: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A job folder's one result, its trajectory and its recorded config."""
    [result] = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    trajectory = json.loads((folder / str(result["trajectory"]) / "trajectory.json").read_text())
    return result, trajectory, json.loads((folder / "resolved_config.json").read_text())


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_a_tool_added_as_a_package_and_a_yaml_file_runs_through_the_cli(repo: Path) -> None:
    # --cfg job shows the new tool's settings, read from its file
    shown = _run_eval(repo, "--cfg", "job")
    assert shown.returncode == 0, shown.stderr[-3000:]
    composed = yaml.safe_load(shown.stdout)
    assert composed["tools"]["measure"] == {"unit": "px"} and "conch" in composed["tools"]
    # one process, two jobs: without the tool (the default agent.tools=[]) and with it, its unit overridden
    script = repo.parent / "script.jsonl"
    script.write_text("".join(json.dumps(step) + "\n" for step in STEPS))
    sweep = repo.parent / "sweep"
    args = ["provider=scripted", f"provider.script={script}", "dataset=demo", "limit=1"]
    proc = _run_eval(
        repo,
        "-m",
        "agent.tools=[],[measure]",
        "tools.measure.unit=cm",
        *args,
        "tracking.enabled=false",
        f"hydra.sweep.dir={sweep}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]

    # (a) a run without the tool works, is not offered it, and records no tool settings
    result, trajectory, config = _job(sweep / "0")
    assert result["status"] == "answered"
    assert trajectory["tool_calls"] == [] and "measure" not in str(trajectory["system_prompt"])
    assert "tools" not in config and "tools" not in config["agent"]

    # (b) agent.tools=[measure] offers it (its prompt paragraph), runs it and records the call
    result, trajectory, config = _job(sweep / "1")
    assert result["status"] == "answered"
    assert "You can also measure your latest image" in str(trajectory["system_prompt"])
    [call] = trajectory["tool_calls"]
    assert call["image"] == "crop 1" and call["region"] == {"x": 0, "y": 0, "w": 1500, "h": 1000}
    assert call["tool"] == "measure" and call["call_index"] == 2 and call["pixels"] == 1500 * 1000
    assert call["unit"] == "cm"  # (c) the override reached the tool
    assert "<h2>Measurements</h2>" in (sweep / "1" / "report.html").read_text()

    # (c) the record has the override, and keeps the enabled tool's settings only
    assert config["agent"]["tools"] == ["measure"]
    assert config["tools"] == {"measure": {"unit": "cm"}}


def test_the_tools_option_composes_every_file_in_conf_tools() -> None:
    from hydra.core.config_store import ConfigStore

    from giant.cli.checks import check_group_choices
    from giant.confdir import EVERY_TOOL, group_options

    node = ConfigStore.instance().load(f"tools/{EVERY_TOOL}.yaml").node
    assert list(node.defaults) == [*(f"{name}@{name}" for name in group_options("tools")), "_self_"]
    check_group_choices([f"tools={EVERY_TOOL}"])  # a known option, though no file


def test_a_tool_named_without_settings_is_one_config_error_line() -> None:
    from giant.errors import ConfigError
    from giant.tools import load_tools
    from giant.tools.settings import ToolSettings

    expected = "agent.tools names conch but tools.conch is not set: add conf/tools/conch.yaml"
    with pytest.raises(ConfigError) as info:
        load_tools(["conch"], ToolSettings())
    assert str(info.value) == expected
