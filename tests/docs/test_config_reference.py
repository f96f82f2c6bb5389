"""The configuration reference (scripts/config_reference.py) against the code it is written from.

The keys expected here are read from the settings models and from Hydra's own composition of conf/,
not from the generator's walk, so a generator that skips a section, or a model and a YAML file that
disagree, fails a test that names the key. The site build itself is tests/docs/test_site.py.
"""

from __future__ import annotations

import importlib
import logging
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import markdown
import pytest
import yaml
from hydra import compose, initialize_config_dir
from mkdocs.config import load_config
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel, Field

from giant.agent.modes import MODES
from giant.confdir import CONF_DIR, PROJECT_ROOT, group_options
from giant.config import (
    GROUPS,
    DatasetSettings,
    PathSettings,
    RunOptions,
    RunSettings,
    TrackingSettings,
)
from giant.data.fetch.settings import FetchSettings
from giant.fetch_job import FetchOptions
from giant.llm.config import provider_names, settings_class
from giant.llm.serve import ServerSettings
from giant.tools import TOOLS

PAGE = "reference/configuration.md"
HOOKS = PROJECT_ROOT / "scripts" / "docs_hooks.py"
# The fields of an entry point's model that are config groups documented in their own sections.
GROUP_FIELDS = {"provider", "agent", "tools", "tracking"}


def _generator() -> ModuleType:
    """scripts/config_reference.py imported as MkDocs imports its hook: from scripts/, beside the
    scripts it imports (ask.py); sys.path is restored after."""
    saved = list(sys.path)
    sys.path.insert(0, str(PROJECT_ROOT / "scripts"))
    try:
        return importlib.import_module("config_reference")
    finally:
        sys.path[:] = saved


ref = _generator()


@pytest.fixture(scope="module")
def rescore_settings() -> type[BaseModel]:
    from giant.rescore_job import RescoreSettings  # imports MLflow: once per module

    return RescoreSettings


@pytest.fixture(scope="module")
def sections() -> dict[str, ref.Group]:
    return {group.id: group for group in ref.groups()}


def keys_of(sections: Mapping[str, ref.Group]) -> dict[tuple[str, str], ref.Key]:
    return {(sid, key.name): key for sid, group in sections.items() for key in group.keys}


# ------------------------------------------------------------------- what the code says there is


def models(rescore: type[BaseModel]) -> dict[str, list[tuple[str, type[BaseModel], set[str]]]]:
    """Per section: (key prefix, model, fields that are not keys of the section)."""
    return {
        "run": [("", RunOptions, set())],
        "paths": [("paths.", PathSettings, set())],
        "agent": [("agent.", mode.settings, set()) for mode in MODES.values()],
        "provider": [("provider.", settings_class(name), set()) for name in provider_names()],
        "dataset": [("dataset.", DatasetSettings, set())],
        "tools": [(f"tools.{name}.", tool.settings, set()) for name, tool in TOOLS.items()],
        "tracking": [("tracking.", TrackingSettings, set())],
        "server": [("server.", ServerSettings, set())],
        "fetch": [("", FetchOptions, {"fetch"}), ("fetch.", FetchSettings, set())],
        "ask": [("", ref.AskSettings, GROUP_FIELDS)],
        "rescore": [("", rescore, GROUP_FIELDS)],
    }


def model_keys(rescore: type[BaseModel]) -> dict[str, set[str]]:
    return {
        section: {key for prefix, model, skip in found for key in _leaves(model, prefix, skip)}
        for section, found in models(rescore).items()
    }


def _leaves(model: type[BaseModel], prefix: str, skip: set[str] | frozenset[str] = frozenset()) -> set[str]:
    """A model's keys; a field holding a settings model (`navigation`, `dataset.annotations`) is its
    own keys, one level down."""
    out = set()
    for name, info in model.model_fields.items():
        if name in skip:
            continue
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            out |= _leaves(info.annotation, f"{prefix}{name}.")
        else:
            out.add(f"{prefix}{name}")
    return out


def launcher_keys() -> dict[str, set[str]]:
    """The `hydra.launcher.*` leaves each conf/launcher file sets (no model of ours reads them)."""
    out: dict[str, set[str]] = {}
    for option in group_options("launcher"):
        data = yaml.safe_load((CONF_DIR / "launcher" / f"{option}.yaml").read_text()) or {}
        launcher = (data.get("hydra") or {}).get("launcher") or {}
        out[option] = {f"hydra.launcher.{key}" for key in leaves(launcher)}
    return out


def leaves(
    data: Mapping[str, Any], prefix: str = "", whole: set[str] | frozenset[str] = frozenset()
) -> list[str]:
    out = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value and name not in whole:
            out += leaves(value, f"{name}.", whole)
        else:
            out.append(name)
    return out


def test_every_run_section_and_conf_group_has_a_section(sections: dict[str, ref.Group]) -> None:
    """A new section of RunSettings or a new folder in conf/ must reach the reference."""
    sections_of_a_run = ("paths", "provider", "dataset", "agent", "run", "tracking", "tools")
    assert sorted(RunSettings.model_fields) == sorted(sections_of_a_run)
    folders = {path.name for path in CONF_DIR.iterdir() if path.is_dir()}
    assert folders | set(GROUPS) <= set(sections), "a config group without a section"
    assert {"run", "paths", "ask", "fetch", "rescore"} <= set(sections)


def test_every_setting_has_a_description(rescore_settings: type[BaseModel]) -> None:
    missing = [
        f"{model.__name__}.{name} ({prefix}{name})"
        for found in models(rescore_settings).values()
        for prefix, model, skip in found
        for name, info in model.model_fields.items()
        if name not in skip and not (info.description or "").strip()
    ]
    assert missing == [], "add Field(description=...) to: " + ", ".join(missing)


def test_every_key_is_in_the_reference_with_a_meaning(
    sections: dict[str, ref.Group],
    rescore_settings: type[BaseModel],
    composed: dict[str, dict[str, DictConfig]],
) -> None:
    """Every model field, and every launcher key conf/ sets, is on the page with its meaning; the
    page has no key that neither a model nor conf/ has."""
    page = ref.render()
    expected = model_keys(rescore_settings)
    expected["launcher"] = set().union(*launcher_keys().values())
    shown = keys_of(sections)
    problems = []
    for section, names in expected.items():
        for name in sorted(names):
            key = shown.get((section, name))
            if key is None:
                problems.append(f"{section}: {name} is missing")
            elif not key.meaning.strip():
                problems.append(f"{section}: {name} has no meaning")
            elif f"`{name}`{{#{key.anchor} " not in page:
                problems.append(f"{section}: {name} is not on the page")
    assert not problems, "the reference lacks:\n  " + "\n  ".join(problems)
    in_conf = {
        name for by_option in composed.values() for cfg in by_option.values() for name in leaves(raw(cfg))
    }
    extra = {(sid, name) for (sid, name) in shown if name not in expected.get(sid, set()) | in_conf}
    assert extra == set(), "keys in the reference that no model or conf file has"


def test_every_experiment_preset_is_listed(sections: dict[str, ref.Group]) -> None:
    listed = [preset.name for preset in sections["experiment"].presets]
    assert listed == group_options("experiment")
    for preset in sections["experiment"].presets:
        assert preset.about and preset.sweeps, preset.name
        assert f"`experiment={preset.name}`" in ref.render(["experiment"], page=False)


def test_every_option_is_listed_with_what_it_is(sections: dict[str, ref.Group]) -> None:
    for group in ("agent", "provider", "dataset", "tools", "tracking", "server", "launcher"):
        listed = dict(sections[group].options)
        assert set(listed) == set(group_options(group)), group
        assert all(about for about in listed.values()), group
    assert sections["provider"].default_option == "random"
    assert [name for name, _ in sections["provider"].options] == list(provider_names())


# ------------------------------------------------------------------------ conf/ against the models


@pytest.fixture(scope="module")
def hydra_init() -> Iterator[None]:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        yield


@pytest.fixture(scope="module")
def composed(hydra_init: None) -> dict[str, dict[str, DictConfig]]:
    """Hydra's composition of every option of every group (several groups per compose, for speed),
    and of the three entry configs; by group, then option."""
    lists = {group: group_options(group) for group in ("agent", "provider", "dataset", "launcher")}
    out: dict[str, dict[str, DictConfig]] = {group: {} for group in (*lists, "tools", "tracking", "server")}
    if True:
        for i in range(max(len(options) for options in lists.values())):
            picked = {group: options[i % len(options)] for group, options in lists.items()}
            cfg = compose(
                "config", overrides=[f"{g}={o}" for g, o in picked.items()], return_hydra_config=True
            )
            for group, option in picked.items():
                out[group].setdefault(option, cfg)
            if i == 0:
                out["tools"] = {option: cfg for option in group_options("tools")}
                out["tracking"] = {option: cfg for option in group_options("tracking")}
                # Alone: it also sets provider.base_url (the provider's own default is checked above).
                out["server"] = {
                    name: compose("config", overrides=[f"server={name}"]) for name in group_options("server")
                }
        out["config"] = {"config": out["tools"]["conch"]}
        out["entry"] = {name: compose(name) for name in ("ask", "fetch", "rescore")}
    return out


def raw(cfg: DictConfig) -> dict[str, Any]:
    data = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(data, dict)
    return {str(k): v for k, v in data.items()}


def diff(model: type[BaseModel], data: Mapping[str, Any], prefix: str) -> tuple[set[str], set[str]]:
    """Keys only in the YAML, keys only in the model (dict-valued fields are one key; a field holding
    a settings model is its keys)."""
    in_yaml = {f"{prefix}{key}" for key in leaves(data, "", frozenset(_whole(model)))}
    in_model = {f"{prefix}{key}" for key in _leaves(model, "")}
    return in_yaml - in_model, in_model - in_yaml


def _whole(model: type[BaseModel], prefix: str = "") -> set[str]:
    out = set()
    for name, info in model.model_fields.items():
        if getattr(info.annotation, "__origin__", None) is dict:
            out.add(f"{prefix}{name}")
        elif isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            out |= _whole(info.annotation, f"{prefix}{name}.")
    return out


def test_the_check_reports_a_key_on_one_side_only() -> None:
    class Model(BaseModel):
        kept: int = Field(description="in both")
        dropped: int = Field(description="in the model only")
        table: dict[str, int] = Field(description="one key, whatever its entries")

    assert diff(Model, {"kept": 1, "added": 2, "table": {"a": 1}}, "x.") == ({"x.added"}, {"x.dropped"})
    # The generator lists both, the YAML-only one without a meaning: the test above names it.
    keys = {
        key.name: key
        for key in ref.build_keys({"o": ref.Source(Model, {"kept": 1, "added": 2}, "x.")}, roles=False)
    }
    assert keys["x.added"].meaning == "" and keys["x.dropped"].default == "—"


def test_conf_and_models_have_the_same_keys(
    composed: dict[str, dict[str, DictConfig]], rescore_settings: type[BaseModel]
) -> None:
    """Every option's keys, as Hydra composes them, against its model: a key on one side only is
    named (its option and side)."""
    by_mode = {name: mode.settings for name, mode in MODES.items()}
    by_provider = {name: settings_class(name) for name in provider_names()}
    report: list[str] = []

    def check(where: str, model: type[BaseModel], data: Any, prefix: str) -> None:
        only_yaml, only_model = diff(model, data if isinstance(data, Mapping) else {}, prefix)
        report.extend(f"{where}: {key} only in conf/" for key in sorted(only_yaml))
        report.extend(f"{where}: {key} only in {model.__name__}" for key in sorted(only_model))

    for mode, cfg in composed["agent"].items():
        check(f"agent={mode}", by_mode[mode], raw(cfg)["agent"], "agent.")
    assert set(composed["agent"]) == set(by_mode), "a mode without a conf file, or a file without a mode"
    for name, cfg in composed["provider"].items():
        check(f"provider={name}", by_provider[name], raw(cfg)["provider"], "provider.")
    assert set(composed["provider"]) == set(by_provider)
    for name, cfg in composed["dataset"].items():
        check(f"dataset={name}", DatasetSettings, raw(cfg)["dataset"], "dataset.")
    for name, cfg in composed["tools"].items():
        check(f"tools={name}", TOOLS[name].settings, raw(cfg)["tools"][name], f"tools.{name}.")
    check("tracking", TrackingSettings, raw(composed["tracking"]["mlflow"])["tracking"], "tracking.")
    check("server=vllm", ServerSettings, raw(composed["server"]["vllm"])["server"], "server.")
    top = raw(composed["config"]["config"])
    check("config.yaml paths", PathSettings, top["paths"], "paths.")
    sections = {"paths", "provider", "dataset", "agent", "tracking", "tools", "server", "hydra"}
    check("config.yaml", RunOptions, {k: v for k, v in top.items() if k not in sections}, "")
    entry = {name: raw(cfg) for name, cfg in composed["entry"].items()}
    check("fetch.yaml fetch", FetchSettings, entry["fetch"]["fetch"], "fetch.")
    assert "check" in entry["fetch"] and set(FetchOptions.model_fields) == {"fetch", "check", "annotations"}
    for name, model in (("ask", ref.AskSettings), ("rescore", rescore_settings)):
        own = {k: v for k, v in entry[name].items() if k not in (*GROUP_FIELDS, "paths")}
        kept = _leaves(model, "", set(GROUP_FIELDS))
        own_keys = set(leaves(own, "", frozenset(_whole(model))))
        only_yaml, only_model = own_keys - kept, kept - own_keys
        report += [f"{name}.yaml: {k} only in conf/" for k in sorted(only_yaml)]
        report += [f"{name}.yaml: {k} only in {model.__name__}" for k in sorted(only_model)]
        assert set(entry[name]["paths"]) <= set(PathSettings.model_fields), name
    assert not report, "conf/ and the settings models disagree:\n  " + "\n  ".join(report)


# --------------------------------------------------------------- defaults against Hydra's composition


def lookup(data: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(data, Mapping) or part not in data:
            return ref.ABSENT
        data = data[part]
    return data


def test_defaults_shown_are_what_hydra_composes(
    sections: dict[str, ref.Group], composed: dict[str, dict[str, DictConfig]]
) -> None:
    """Each option's default (interpolations as written) equals Hydra's composed value, and the cell
    shows it."""
    checked = 0
    sources = {
        "agent": composed["agent"],
        "provider": composed["provider"],
        "dataset": composed["dataset"],
        "tools": composed["tools"],
        "tracking": composed["tracking"],
        "server": composed["server"],
        "launcher": composed["launcher"],
        "run": composed["config"],
        "paths": composed["config"],
        "ask": {"ask": composed["entry"]["ask"]},
        "fetch": {"fetch": composed["entry"]["fetch"]},
        "rescore": {"rescore": composed["entry"]["rescore"]},
    }
    for section, by_option in sources.items():
        for key in sections[section].keys:
            for option in key.owners:
                value = lookup(raw(by_option[option]), key.name)
                assert value is not ref.ABSENT, f"{key.name} ({option}) is not in Hydra's composition"
                assert key.defaults[option] == value, f"{key.name} ({option})"
                if key.default == ref.NAMED:  # the discriminator: each option sets its own name
                    assert value == option, key.name
                else:
                    assert ref.format_value(value) in key.default, f"{key.name} ({option})"
                checked += 1
    assert checked > 150


def test_defaults_shown_are_what_a_run_validates(
    sections: dict[str, ref.Group], hydra_init: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through giant's own loading (`RunSettings.from_config`, values resolved and validated): a
    default that is a plain value in conf/ is the value a run gets."""
    monkeypatch.delenv("GIANT_MULTIPATHQA_CSV", raising=False)
    cases = [("anthropic", "patch", "tcga"), ("openai", "giant", "gtex"), ("random", "thumbnail", "panda")]
    checked = 0
    for provider, agent, dataset in cases:
        overrides = [f"provider={provider}", f"agent={agent}", f"dataset={dataset}", "dry_run=true"]
        dumped = RunSettings.from_config(compose("config", overrides=overrides)).model_dump(mode="json")
        record = {**dumped.pop("run"), **dumped}  # laid out as conf/ is (RunSettings.record, idle tools kept)
        picked = {"provider": provider, "agent": agent, "dataset": dataset, "tracking": "mlflow"}
        for section in ("run", "provider", "agent", "dataset", "tracking"):
            option = picked.get(section, "config")
            for key in sections[section].keys:
                value = key.defaults.get(option, ref.ABSENT)
                interpolated = isinstance(value, str) and "${" in value
                if option not in key.modelled or key.name == "dry_run" or interpolated:
                    continue
                assert lookup(record, key.name) == value, f"{key.name} ({option})"
                checked += 1
    assert checked > 60


# ---------------------------------------------------------------------------------------- the page


def test_page_links_and_ids_hold() -> None:
    """Every link on the page is to an anchor on it (no link to another page that might not exist),
    and every id is unique."""
    config = load_config(str(PROJECT_ROOT / "mkdocs.yml"))
    html = markdown.markdown(
        ref.render(), extensions=config.markdown_extensions, extension_configs=config.mdx_configs
    )
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))
    hrefs = re.findall(r'\bhref="([^"]+)"', html)
    assert hrefs and all(href.startswith("#") for href in hrefs), hrefs
    assert {href[1:] for href in hrefs} <= set(ids)
    assert 'id="agent.max_steps"' in html and 'id="provider"' in html
    assert "**no description**" not in ref.render()


def test_terminal_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert ref.main(["agent"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("## Agent modes")
    assert "| `agent.max_steps` | `int`, ≥ 1, ≤ 100 | `20`; *patch, thumbnail:* `1` |" in out
    assert "{#" not in out and "---\nhide" not in out
    with pytest.raises(SystemExit):
        ref.main(["agnet"])


def hook_config() -> tuple[MkDocsConfig, Any]:
    config = load_config(str(PROJECT_ROOT / "mkdocs.yml"))
    hooks = [p for p in config.plugins.values() if Path(getattr(p, "__file__", "")) == HOOKS]
    assert len(hooks) == 1, "mkdocs.yml names scripts/docs_hooks.py under hooks:"
    return config, hooks[0]


def test_the_hook_puts_the_generated_page_in_the_placeholders_place(caplog: pytest.LogCaptureFixture) -> None:
    """docs/ holds a placeholder (a reader of the repository is told where the page comes from); a
    build replaces it with the generated page, quietly."""
    config, hook = hook_config()
    placeholder = PROJECT_ROOT / "docs" / PAGE
    assert placeholder.read_text().startswith(hook.PLACEHOLDER)
    committed = File(
        PAGE, src_dir=str(placeholder.parents[1]), dest_dir=config.site_dir, use_directory_urls=False
    )
    with caplog.at_level(logging.WARNING):
        files = config.plugins.on_files(Files([committed]), config=config)  # as a build calls it
    [page] = [f for f in files if f.src_uri == PAGE]
    assert page.generated_by is not None and page.content_string == ref.render()
    assert caplog.text == ""


def test_the_hook_replaces_a_stale_copy(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    config, _ = hook_config()
    (tmp_path / PAGE).parent.mkdir(parents=True)
    (tmp_path / PAGE).write_text("# Configuration reference\n\n| `agent.max_steps` | `int` | `20` |\n")
    stale = File(PAGE, src_dir=str(tmp_path), dest_dir=config.site_dir, use_directory_urls=False)
    with caplog.at_level(logging.WARNING):
        files = config.plugins.on_files(Files([stale]), config=config)
    assert [f.content_string for f in files if f.src_uri == PAGE] == [ref.render()]
    assert "generated from the code" in caplog.text
