"""Adding a provider is a package in giant/llm/providers/ plus conf/provider/<name>.yaml, and adding an
agent mode a module in giant/agent/modes/ plus conf/agent/<name>.yaml, as adding a tool is a package and
a YAML file (tests/tools/test_new_tool_package.py): nothing else names them (giant.registry).

A real provider (a hosted OpenAI-compatible API under its own name and key variable, on the real
openai SDK, against a loopback server) and a real mode (one call with the overview) are written the way
a user would into a copy of giant/ and conf/; the real CLI (scripts/run_eval.py, a Hydra subprocess
with the copy on PYTHONPATH) runs them with the real MLflow store, and the calls are priced from
conf/pricing.yaml.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from giant.tracking.names import COST_METRIC
from tests.llm.open_server import OpenServer, serving

ROOT = Path(__file__).resolve().parents[1]

PROVIDER = '''"""A hosted OpenAI-compatible API under its own name and key variable."""

from typing import ClassVar, Literal

from pydantic import Field

from giant.llm.config import OpenAICompatibleSettings
from giant.registry import register
from giant.roles import Method


@register("provider")
class LoopbackSettings(OpenAICompatibleSettings):
    implementation = "giant.llm.providers.loopback.provider:LoopbackProvider"
    key_required: ClassVar[bool] = True
    name: Method[Literal["loopback"]] = Field(description="The provider; picking `provider=<name>` sets it.")
'''
PROVIDER_CLASS = '''"""The loopback API's provider: Chat Completions, as the OpenAI-compatible one."""

from giant.llm.openai_compatible import OpenAICompatibleProvider


class LoopbackProvider(OpenAICompatibleProvider):
    name = "loopback"
'''
PROVIDER_YAML = """name: loopback
model: gpt-4o  # priced in conf/pricing.yaml
protocol: structured
base_url: ???
api_key_env: LOOPBACK_API_KEY
crop_size: 640
image_detail: high
json_schema: response_format
preflight: false
image_tokens: auto
max_model_len: null
gpu_hour_usd: null
gpus: 1
tokens_per_s: null
max_tokens: null
temperature: null
max_retries: 0
timeout_s: 60
rpm: null
tpm: null
prompt_caching: false
pricing_file: ${paths.root}/conf/pricing.yaml
"""
MODE = '''"""Answer from the overview alone, in one call: a mode added as a user would add it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from giant.agent.config import RegionsConfig
from giant.agent.modes.base import CallPlan, Mode, register
from giant.roles import Method

if TYPE_CHECKING:
    from giant.agent.episode_state import EpisodeState


class GlanceConfig(RegionsConfig):
    mode: Method[Literal["glance"]] = Field(description="The agent mode; picking `agent=<mode>` sets it.")
    glance_note: Method[str] = Field(description="A sentence added to the question.")


@register
class GlanceMode(Mode[GlanceConfig]):
    name = "glance"
    settings = GlanceConfig

    async def run(self, ep: EpisodeState[GlanceConfig]) -> None:
        from giant.agent.baselines import Asked, ask_for_answer
        from giant.agent.context import Context
        from giant.agent.episode_state import RetryCounter
        from giant.agent.loop import image_part, overview
        from giant.llm.types import TextPart

        first = await overview(ep)
        ep.add_region(0, first)
        ctx = Context(system=None)
        ctx.add_user([TextPart(text=f"{ep.item.prompt} {ep.cfg.glance_note}"), image_part(first, "overview")])
        text = await ask_for_answer(ep, ctx, RetryCounter(ep.cfg.max_retries), Asked())
        ep.steps += 1
        ep.answered(text, budget_forced=False)

    def plan(self, cfg: GlanceConfig) -> CallPlan:
        return CallPlan(calls=1, image_side=cfg.crop_size, conversation=False)

    def run_name(self, cfg: GlanceConfig, dataset: str) -> str:
        return f"{dataset}-glance-S{cfg.crop_size}"
'''
MODE_YAML = """defaults:
  - /agent_common@_here_
  - _self_
mode: glance
max_steps: 1
max_images_in_context: null
guides: 4
glance_note: Look closely.
"""
ADDED = {
    "giant/llm/providers/loopback/__init__.py": PROVIDER,
    "giant/llm/providers/loopback/provider.py": PROVIDER_CLASS,
    "conf/provider/loopback.yaml": PROVIDER_YAML,
    "giant/agent/modes/glance.py": MODE,
    "conf/agent/glance.yaml": MODE_YAML,
}


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
    """A copy of giant/, conf/ and the entrypoint with the provider and the mode added."""
    root = tmp_path_factory.mktemp("new_members") / "repo"  # its parent holds this test's jobs alone
    for tree in ("giant", "conf"):
        shutil.copytree(ROOT / tree, root / tree)
    (root / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "run_eval.py", root / "scripts")
    before = _files(root)
    for path, text in ADDED.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    after = _files(root)
    assert set(after) - set(before) == set(ADDED)
    assert {path: after[path] for path in before} == before  # no other file of giant/ or conf/ changed
    return root


def _run_eval(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    tmp = repo.parent
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIANT_", "MLFLOW_", "HYDRA_"))}
    env.update(
        PYTHONPATH=str(repo),  # the copy's giant, not the installed one
        LOOPBACK_API_KEY="sk-loopback-test",
        GIANT_CACHE_DIR=str(tmp / "cache"),
        GIANT_OUTPUT_DIR=str(tmp / "outputs"),
        GIANT_MULTIRUN_DIR=str(tmp / "multirun"),
    )
    script = repo / "scripts" / "run_eval.py"
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=300, cwd=tmp, env=env
    )


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_a_provider_and_a_mode_added_as_files_run_through_the_cli(repo: Path) -> None:
    server = OpenServer("vllm", models=("gpt-4o",))
    uri = f"sqlite:///{repo.parent / 'mlflow.db'}"
    sweep = repo.parent / "sweep"
    with serving(server) as url:
        proc = _run_eval(
            repo,
            "-m",
            "agent=giant,glance",
            "provider=loopback",
            f"provider.base_url={url}",
            "dataset=demo",
            "limit=1",
            "agent.max_steps=3",
            f"tracking.uri={uri}",
            "tracking.experiment=new-members",
            f"hydra.sweep.dir={sweep}",
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert all(body["model"] == "gpt-4o" for body in server.bodies)
    assert "Look closely." in json.dumps(server.bodies[-1])  # the mode's own setting reached the prompt

    client = MlflowClient(uri)
    [experiment] = [e for e in client.search_experiments() if e.name == "new-members"]
    runs = {r.data.params.get("agent.mode"): r for r in client.search_runs([experiment.experiment_id])}
    calls = 0
    for job, mode in enumerate(("giant", "glance")):
        config = json.loads((sweep / str(job) / "resolved_config.json").read_text())
        assert config["provider"]["name"] == "loopback" and config["agent"]["mode"] == mode
        [result] = [
            json.loads(line) for line in (sweep / str(job) / "results.jsonl").read_text().splitlines()
        ]
        assert result["status"] == "answered" and result["dollars"] > 0  # priced from conf/pricing.yaml
        calls += result["calls"]
        run = runs[mode]
        assert run.data.params["provider.name"] == "loopback"
        assert run.data.metrics[COST_METRIC] == pytest.approx(result["dollars"])
    assert calls == server.chats  # every call went to the new provider's server
    assert runs["glance"].data.params["agent.glance_note"] == "Look closely."
