"""Library use does not depend on import order: in a fresh interpreter, every public name of every
package imports, and the documented entry points (an agent's settings, a provider's settings, a slide,
a finished job) work, with nothing of giant imported first.

Each check is its own `python -c` subprocess, so nothing the test process imported helps it. A
package root imports plainly (no lazy roots), running the same code whichever name is asked for, so
its names are checked in one interpreter; the entry modules of the roots that re-export nothing get
an interpreter each.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import giant

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(["giant", *(m.name for m in pkgutil.walk_packages(giant.__path__, "giant.") if m.ispkg)])


def _fresh(code: str) -> str:
    """Run `code` in a new interpreter from the project root; its stdout, or the failure's last line."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, (proc.stderr.strip().splitlines() or ["(no stderr)"])[-1]
    return proc.stdout


def _import_groups() -> list[tuple[str, tuple[str, ...]]]:
    """(package, names) per interpreter: each package root that re-exports names, with all of them."""
    exports = {name: tuple(getattr(importlib.import_module(name), "__all__", ())) for name in PACKAGES}
    return [(name, names) for name, names in exports.items() if names]


GROUPS = _import_groups()


@pytest.mark.slow
@pytest.mark.parametrize(("package", "names"), GROUPS, ids=[f"{p}:{n[0]}" for p, n in GROUPS])
def test_every_public_name_imports_first(package: str, names: tuple[str, ...]) -> None:
    _fresh(f"from {package} import {', '.join(names)}")


# The entry points of the package roots that re-export nothing (their modules pull heavy dependencies;
# each root's docstring names them): each imported first, in an interpreter of its own.
ENTRY_MODULES = [
    *(f"giant.llm.{m}" for m in ("types", "config", "factory", "pricing", "ledger")),
    *(f"giant.data.{m}" for m in ("multipathqa", "demo", "custom", "digest", "check", "slides", "defects")),
    "giant.data.prompts",
    *(f"giant.data.fetch.{m}" for m in ("settings", "plan", "run")),
    *(f"giant.eval.{m}" for m in ("runner", "run_options", "metrics", "scoring", "voting", "dryrun")),
    "giant.eval.resume",
    *(f"giant.tracking.{m}" for m in ("mlflow_logger", "traces", "viewer", "published")),
    *(f"giant.tracking.tables.{m}" for m in ("rows", "load", "formats", "versus_paper", "figures", "report")),
    "giant.agent.episode",
    "giant.compare.run",
    "giant.compare.pairs",
    "giant.tools.settings",
]


@pytest.mark.slow
@pytest.mark.parametrize("module", ENTRY_MODULES)
def test_every_entry_module_imports_first(module: str) -> None:
    _fresh(f"import {module}")


def test_the_groups_cover_every_public_name() -> None:
    covered = {(package, name) for package, names in GROUPS for name in names}
    every = {(p, name) for p in PACKAGES for name in getattr(importlib.import_module(p), "__all__", ())}
    assert covered == every and len(every) > 50


@pytest.mark.parametrize("kind", ["mode", "provider", "tool"])
def test_reading_a_registry_first(kind: str) -> None:
    """A kind's members read before anything else (its home builds a settings union at import)."""
    names = _fresh(f"from giant.registry import members\nprint(' '.join(members({kind!r})))").split()
    expected = {"mode": "giant", "provider": "openai", "tool": "conch"}[kind]
    assert expected in names and len(names) == len(set(names))


def test_parsing_an_agents_settings_first() -> None:
    """conf/ composes without giant.config imported first (it used to lack the `tools: all` option)."""
    code = (
        "from giant.agent.modes import parse_agent\n"
        "print(parse_agent({}).model_dump_json())\n"
        "print(parse_agent({'mode': 'patch'}, provider='anthropic').model_dump_json())\n"
    )
    giant_cfg, patch_cfg = map(json.loads, _fresh(code).splitlines())
    assert giant_cfg["mode"] == "giant" and giant_cfg["max_steps"] == 20
    assert patch_cfg["mode"] == "patch" and (patch_cfg["crop_size"], patch_cfg["patch_size"]) == (500, 224)


def test_a_providers_settings_first() -> None:
    code = (
        "from giant.llm.config import provider_settings\n"
        "print(provider_settings('anthropic', model='claude-x').model_dump_json())\n"
    )
    settings = json.loads(_fresh(code))
    assert (settings["name"], settings["model"]) == ("anthropic", "claude-x")
    assert settings["api_key_env"] == "ANTHROPIC_API_KEY"


def test_opening_a_slide_first(tmp_path: Path) -> None:
    from giant.wsi.synthetic import write_synthetic_slide

    path = write_synthetic_slide(tmp_path / "s.svs", 1200, 800, seed=3)
    code = (
        "from giant.core import Box\n"
        "from giant.wsi.slide import Slide\n"
        f"with Slide.open({str(path)!r}) as slide:\n"
        "    region = slide.read_region(Box(x=0, y=0, w=600, h=400), 300)\n"
        "    print(slide.width, slide.height, region.image.size)\n"
    )
    assert _fresh(code).split() == ["1200", "800", "(300,", "200)"]


def test_reading_a_job_first(tmp_path: Path) -> None:
    """A finished job (the real runner on a synthetic slide, its settings' record beside it) read back
    through giant.record and turned into the run's settings as a re-score does."""
    from giant.confdir import compose
    from giant.config import RunSettings
    from giant.record import write_resolved_config
    from tests.eval.runner_fixtures import evaluate, make_items, random_provider, write_slides

    out = tmp_path / "job"
    wsi_root = write_slides(tmp_path / "slides", ["a.svs"])
    asyncio.run(evaluate(make_items(2, ["a.svs"]), wsi_root, random_provider(), out))
    settings = RunSettings.from_config(compose("config", ["provider=random", "dataset=demo"]))
    write_resolved_config(out, settings.record())
    code = (
        "from pathlib import Path\n"
        "from giant.record import JobLayout, read_resolved_config, read_results, read_summary\n"
        "from giant.rescore_job import settings_of\n"
        f"out = Path({str(out)!r})\n"
        "records = read_results(JobLayout(out).results)\n"
        "again = settings_of(read_resolved_config(out))\n"
        "print(len(records), read_summary(out).n_items, again.config_hash())\n"
    )
    n_records, n_items, config_hash = _fresh(code).split()
    assert (n_records, n_items, config_hash) == ("2", "2", settings.config_hash())
