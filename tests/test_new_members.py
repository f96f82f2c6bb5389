"""Adding a member of any registered kind is its own files and nothing else (giant.registry): a provider
is a package in giant/llm/providers/ plus conf/provider/<name>.yaml, a mode a module in giant/agent/modes/
plus conf/agent/<name>.yaml, a metric a module in giant/eval/metrics/, a dataset loader a module in
giant/data/loaders/ plus the conf/dataset/<name>.yaml that picks it (a tool:
tests/tools/test_new_tool_package.py).

Each is written the way a user would, into a copy of giant/ and conf/ whose other files are checked
unchanged, and the copy runs real jobs in this process (`giant.evaluate`, its modules imported from the
copy for the test's duration): a real provider (a hosted OpenAI-compatible API under its own name and key
variable, on the real openai SDK, against a loopback server) and a real mode (one call with the overview),
recorded in a real MLflow store and priced from conf/pricing.yaml; then macro-F1 and a JSON Lines question
loader, whose items the job loads and whose metric lands in summary.json and MLflow.
"""

from __future__ import annotations

import csv
import hashlib
import importlib
import json
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from mlflow.tracking import MlflowClient
from sklearn.metrics import f1_score

from giant.data.demo import build_demo
from giant.tracking.names import COST_METRIC, MAIN_METRIC
from tests.llm.open_server import OpenServer, serving

ROOT = Path(__file__).resolve().parents[1]

PROVIDER = '''"""A hosted OpenAI-compatible API under its own name and key variable."""

from typing import ClassVar, Literal

from pydantic import Field

from giant.llm.providers.openai_compatible import OpenAICompatibleSettings
from giant.registry import register
from giant.roles import Method


@register("provider")
class LoopbackSettings(OpenAICompatibleSettings):
    implementation = "giant.llm.providers.loopback.provider:LoopbackProvider"
    key_required: ClassVar[bool] = True
    name: Method[Literal["loopback"]] = Field(description="The provider; picking `provider=<name>` sets it.")
'''
PROVIDER_CLASS = '''"""The loopback API's provider: Chat Completions, as the OpenAI-compatible one."""

from giant.llm.providers.openai_compatible.provider import OpenAICompatibleProvider


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
from giant.agent.modes.base import CallPlan, Mode
from giant.registry import register
from giant.roles import Method

if TYPE_CHECKING:
    from giant.agent.episode_state import EpisodeState


class GlanceConfig(RegionsConfig):
    mode: Method[Literal["glance"]] = Field(description="The agent mode; picking `agent=<mode>` sets it.")
    glance_note: Method[str] = Field(description="A sentence added to the question.")


@register("mode")
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
METRIC = '''"""Macro-F1: the mean F1 over the classes in the truth (a failure is no class's answer)."""

import numpy as np

from giant.eval.metrics.base import Metric
from giant.registry import register


@register("metric")
class MacroF1(Metric):
    name = "macro_f1"

    def score(self, y_true: np.ndarray, y_pred: np.ndarray) -> float:
        classes = np.unique(y_true)
        hits = np.array([np.sum((y_true == c) & (y_pred == c)) for c in classes])
        sizes = np.array([np.sum(y_true == c) + np.sum(y_pred == c) for c in classes])
        return float(np.mean(2 * hits / sizes))
'''
LOADER = '''"""Questions as JSON Lines, one {"id", "slide", "question", "choices", "answer"} object a
line (the answer is one of the choices), scored by macro-F1."""

import json
from pathlib import Path

from giant.core import Item
from giant.data.custom import render_question
from giant.data.digest import DatasetDigests
from giant.data.loaders.base import DatasetFields, Loaded, Loader
from giant.registry import register


@register("loader")
class JsonlQuestions(Loader):
    name = "jsonl_questions"
    task_file = True

    def load(self, ds: DatasetFields, *, wsi_root: Path, cache_dir: Path, check_slides: bool) -> Loaded:
        from giant.data.multipathqa import content_hash

        assert ds.path is not None
        rows = [json.loads(line) for line in ds.path.read_text().splitlines() if line.strip()]
        items = [
            Item(
                benchmark=ds.name,
                benchmark_id=row["id"],
                image_path=row["slide"],
                prompt=render_question(row["question"], row["choices"]),
                options=tuple(row["choices"]),
                truth=row["choices"].index(row["answer"]) + 1,
                metric="macro_f1",
            )
            for row in rows
        ]
        return Loaded(items, wsi_root, content_hash(items), DatasetDigests.of(items, location=str(ds.path)))
'''
DATASET_YAML = """# Shape questions as JSON Lines (dataset.path=FILE), scored by macro-F1.
defaults:
  - /dataset_common@_here_
  - _self_
name: shapes_jsonl
source: jsonl_questions
"""
ADDED = {
    "giant/llm/providers/loopback/__init__.py": PROVIDER,
    "giant/llm/providers/loopback/provider.py": PROVIDER_CLASS,
    "conf/provider/loopback.yaml": PROVIDER_YAML,
    "giant/agent/modes/glance.py": MODE,
    "conf/agent/glance.yaml": MODE_YAML,
    "giant/eval/metrics/macro_f1.py": METRIC,
    "giant/data/loaders/jsonl_questions.py": LOADER,
    "conf/dataset/shapes_jsonl.yaml": DATASET_YAML,
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
    """A copy of giant/ and conf/ with the provider, the mode, the metric and the loader added."""
    root = tmp_path_factory.mktemp("new_members") / "repo"  # its parent holds this module's jobs alone
    for tree in ("giant", "conf"):
        shutil.copytree(ROOT / tree, root / tree, ignore=shutil.ignore_patterns("__pycache__"))
    before = _files(root)
    for path, text in ADDED.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    after = _files(root)
    assert set(after) - set(before) == set(ADDED)
    assert {path: after[path] for path in before} == before  # no other file of giant/ or conf/ changed
    return root


def _giants() -> dict[str, ModuleType]:
    return {name: module for name, module in sys.modules.items() if name.split(".")[0] == "giant"}


@contextmanager
def the_copy(repo: Path) -> Iterator[ModuleType]:
    """The copy's `giant` in place of this process's for the block: its modules imported afresh from
    `repo` (third-party ones stay shared), and this process's put back after."""
    ours = _giants()
    for name in ours:
        del sys.modules[name]
    sys.path.insert(0, str(repo))
    importlib.invalidate_caches()
    try:
        copy = importlib.import_module("giant")
        assert Path(copy.__file__ or "").is_relative_to(repo)
        yield copy
    finally:
        sys.path.remove(str(repo))
        for name in _giants():
            del sys.modules[name]
        sys.modules.update(ours)


def _overrides(repo: Path, *args: str) -> list[str]:
    """A job of the copy with everything it writes beside the copy."""
    tmp = repo.parent
    return [
        *args,
        f"paths.root={repo}",
        f"paths.cache_dir={tmp / 'cache'}",
        f"tracking.uri=sqlite:///{tmp / 'mlflow.db'}",
        "tracking.experiment=new-members",
    ]


def _runs(repo: Path) -> dict[str, Any]:
    client = MlflowClient(f"sqlite:///{repo.parent / 'mlflow.db'}")
    [experiment] = [e for e in client.search_experiments() if e.name == "new-members"]
    return {run.info.run_name: run for run in client.search_runs([experiment.experiment_id])}


def _results(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_a_provider_and_a_mode_added_as_files_run_a_job(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPBACK_API_KEY", "sk-loopback-test")
    server = OpenServer("vllm", models=("gpt-4o",))
    jobs = repo.parent / "jobs"
    with serving(server) as url, the_copy(repo) as giant:
        for mode in ("giant", "glance"):
            giant.evaluate(
                _overrides(
                    repo,
                    f"agent={mode}",
                    "provider=loopback",
                    f"provider.base_url={url}",
                    "dataset=demo",
                    "limit=1",
                    "agent.max_steps=3",
                ),
                output_dir=jobs / mode,
            )
    assert all(body["model"] == "gpt-4o" for body in server.bodies)
    assert "Look closely." in json.dumps(server.bodies[-1])  # the mode's own setting reached the prompt

    runs = {run.data.params.get("agent.mode"): run for run in _runs(repo).values()}
    calls = 0
    for mode in ("giant", "glance"):
        config = json.loads((jobs / mode / "resolved_config.json").read_text())
        assert config["provider"]["name"] == "loopback" and config["agent"]["mode"] == mode
        [result] = _results(jobs / mode)
        assert result["status"] == "answered" and result["dollars"] > 0  # priced from conf/pricing.yaml
        calls += result["calls"]
        run = runs[mode]
        assert run.data.params["provider.name"] == "loopback"
        assert run.data.metrics[COST_METRIC] == pytest.approx(result["dollars"])
    assert calls == server.chats  # every call went to the new provider's server
    assert runs["glance"].data.params["agent.glance_note"] == "Look closely."


@pytest.mark.slow
def test_a_metric_and_a_loader_added_as_files_score_a_job(repo: Path) -> None:
    demo = build_demo(repo.parent / "cache" / "demo")  # the slides and shape questions the job reuses
    with demo.task_file.open(newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row["task"] == "demo_shapes"]
    lines = [
        {
            "id": f"shape-{row['id']}",
            "slide": row["slide"],
            "question": row["question"],
            "choices": json.loads(row["options"]),
            "answer": json.loads(row["options"])[int(row["answer"]) - 1],
        }
        for row in rows
    ]
    questions = repo.parent / "shapes.jsonl"
    questions.write_text("".join(json.dumps(line) + "\n" for line in lines))
    folder = repo.parent / "jsonl_job"
    with the_copy(repo) as giant:
        summary = giant.evaluate(
            _overrides(
                repo,
                "dataset=shapes_jsonl",
                f"dataset.path={questions}",
                f"dataset.wsi_root={demo.wsi_root}",
                "provider=random",
                "agent.max_steps=2",
                "bootstrap_replicates=20",
            ),
            output_dir=folder,
        )
    results = {record["key"].split("/", 1)[1]: record for record in _results(folder)}
    assert sorted(results) == sorted(line["id"] for line in lines)  # every JSONL question ran
    truth = [line["choices"].index(line["answer"]) + 1 for line in lines]
    labels = [-1 if (label := results[line["id"]]["label"]) is None else label for line in lines]
    expected = f1_score(truth, labels, labels=np.unique(truth), average="macro", zero_division=0)

    written = json.loads((folder / "summary.json").read_text())
    assert summary is not None and written["metric_name"] == summary.metric_name == "macro_f1"
    assert written["macro_f1"] == pytest.approx(expected) == written["metric"]["point"]
    assert written["n_items"] == len(lines)
    [run] = [run for name, run in _runs(repo).items() if name.startswith("shapes_jsonl")]
    assert run.data.metrics["macro_f1"] == pytest.approx(expected)
    assert run.data.metrics[MAIN_METRIC] == pytest.approx(expected)  # the task's own metric
    assert {"accuracy", "balanced_accuracy"} <= run.data.metrics.keys()  # the shipped ones beside it
