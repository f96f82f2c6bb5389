"""The configuration reference, written from the code so it cannot drift from it.

Every key a user can set is read from where it is defined: its name, type, bounds, role (giant.roles)
and one-line meaning (`Field(description=...)`) from the pydantic settings models, its default from
conf/ as the CLI composes it (giant.confdir.compose, the one composition of conf/; the models hold
types and checks only). Keys that no model of ours reads (the Hydra launcher plugins'
`hydra.launcher.*`) take their type from the plugin's config class and their meaning from the comment
beside them in conf/launcher/. Nothing here lists keys by hand: a new setting appears in the reference
as soon as its model and its YAML have it.

Docs tooling, not runtime: the MkDocs hook scripts/docs_hooks.py writes the page
`reference/configuration.md` from `render()` on every build (the page is never a file in docs/);
`python scripts/config_reference.py [SECTION ...]` prints it in the terminal. Every sentence of the page
is in the Markdown template beside this file (scripts/config_reference.md); the options' lists come from
the registry (giant.registry). tests/docs/ checks every key against the models and conf/ independently.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import re
import sys
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import jinja2

# A sibling script, imported as scripts/ imports its neighbours (this folder is on sys.path when this
# runs as a script and when MkDocs imports its hook): the settings model of `python scripts/ask.py`.
from ask import AskSettings
from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from giant.confdir import CONF_DIR, compose, group_options
from giant.config import GROUPS, DatasetSettings, PathSettings, RunOptions, TrackingSettings, record_roles
from giant.llm.serve import ServerSettings
from giant.registry import Kind, members, settings_models
from giant.roles import Role, role_of
from giant.tools.registry import known_tool

MISSING = "???"  # Hydra's mark of a value the user must pass
NAMED = "the option's name"  # the default of a group's discriminator (agent.mode, provider.name)
ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "ABSENT"})()  # a key an option has no value for
# The fields of an entry point's model that are config groups documented in their own sections.
GROUP_FIELDS = frozenset({*GROUPS, "paths"})


@dataclass(frozen=True)
class Key:
    """One setting as the reference shows it."""

    name: str  # as typed on the command line: agent.max_steps, seed, hydra.launcher.n_jobs
    anchor: str  # the HTML id of its row, unique on the page
    type_and_bounds: str  # the Type cell: its type, then its bounds
    defaults: Mapping[str, Any]  # option -> its composed value (interpolations kept); ABSENT: none
    default: str  # the defaults as shown (Markdown)
    owners: tuple[str, ...]  # the group's options that have the key
    role: str  # giant.roles value; "" for keys outside a run's record
    meaning: str
    modelled: tuple[str, ...] = ()  # the owners whose settings model has the key (not only conf/)


@dataclass(frozen=True)
class Preset:
    """One experiment preset (conf/experiment/<name>.yaml): a sweep, run with -m."""

    name: str
    about: str
    example: str
    sweeps: Mapping[str, str]
    sets: Mapping[str, Any]


@dataclass(frozen=True)
class Group:
    """One section of the page: a config group, the run's top-level keys or an entry point's."""

    id: str  # its anchor and its block in the template
    keys: tuple[Key, ...] = ()
    options: tuple[tuple[str, str], ...] = ()  # (option, what its file says it is)
    default_option: str | None = None
    owner_label: str = ""  # column naming the options that have a key ("Modes"); "": all have all
    roles: bool = False  # its keys are part of a run's record (giant.roles applies)
    notes: tuple[str, ...] = ()
    presets: tuple[Preset, ...] = ()


# --------------------------------------------------------------------------------- prose (template)

TEMPLATE = Path(__file__).with_suffix(".md")  # every sentence of the page, by block
_MARKER = re.compile(r"^<!-- (\S[^>]*?) -->\n", re.M)


@functools.cache
def prose() -> dict[str, str]:
    """The template's blocks by marker (`intro`, `roles`, `role: <role>`, `group: <id>`, `text: <name>`)."""
    parts = _MARKER.split(TEMPLATE.read_text(encoding="utf-8"))
    return {name: text.strip("\n") for name, text in zip(parts[1::2], parts[2::2], strict=True)}


def text(name: str, **fields: str) -> str:
    """A sentence of the template (`<!-- text: name -->`) with its `{fields}` filled in."""
    return paragraphs(prose()[f"text: {name}"])[0].format(**fields)


def paragraphs(block: str) -> list[str]:
    """A block's paragraphs, each on one line (a table cell or a terminal reads it so)."""
    return [" ".join(part.split()) for part in re.split(r"\n\s*\n", block) if part.strip()]


def titled(block: str) -> tuple[str, list[str]]:
    """A block that starts with a `## ` title: the title and the paragraphs below it."""
    title, _, rest = prose()[block].partition("\n")
    return title.removeprefix("## "), paragraphs(rest)


# ---------------------------------------------------------------------------------------------- conf/


@functools.cache
def composed(config: str, *overrides: str) -> DictConfig:
    """conf/<config>.yaml with `overrides`, composed as the CLI composes it (giant.confdir.compose)."""
    return compose(config, overrides)


@functools.cache
def values(config: str, *overrides: str) -> dict[str, Any]:
    """A composed config as plain data: interpolations (`${...}`) and `???` kept as written."""
    data = OmegaConf.to_container(composed(config, *overrides), resolve=False)
    assert isinstance(data, dict), config
    return {str(key): value for key, value in data.items()}


# Groups whose options set nothing outside their own section (and `hydra.`): several are composed at
# once, the i-th option of each, which keeps a build's compositions few.
BATCHED = ("agent", "provider", "dataset", "launcher")


@functools.cache
def _batches() -> dict[str, tuple[str, ...]]:
    """The overrides whose composition holds each option of the batched groups, by `group=option`."""
    lists = {group: group_options(group) for group in BATCHED}
    out: dict[str, tuple[str, ...]] = {}
    for i in range(max(map(len, lists.values()))):
        overrides = tuple(f"{group}={options[i % len(options)]}" for group, options in lists.items())
        out.update({override: overrides for override in overrides if override not in out})
    return out


def option_overrides(group: str, option: str) -> tuple[str, ...]:
    """The overrides of conf/config.yaml that compose `group=option` (tools: all of them, always)."""
    override = f"{group}={option}"
    return () if group == "tools" else _batches().get(override, (override,))


def about_file(path: Path) -> tuple[str, str]:
    """A conf file's leading comment (what it is) and the example command in it, if any."""
    about: list[str] = []
    example = ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        line_text = line[1:]
        if re.match(r"\s*@package\b", line_text):
            continue
        if re.match(r" {2,}\S", line_text):  # an indented line is an example command
            example = example or line_text.strip()
            continue
        about.append(line_text.strip())
    joined = " ".join(part for part in about if part).strip().removesuffix("e.g.").rstrip(" ,:;")
    return (joined + "." if joined and joined[-1] not in ".!?" else joined), example


_YAML_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][\w.-]*):(?P<rest>.*)$")


def yaml_keys(path: Path) -> dict[str, str]:
    """Each leaf key a conf file writes, by dotted key, with its comment: the one beside it, else the
    block of comment lines right above it. Composition drops comments, so the file is read line by line."""
    out: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    above: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            above.append(stripped.lstrip("#").strip())
            continue
        match = _YAML_KEY.match(line)
        if not match:
            above = []
            continue
        while stack and stack[-1][0] >= len(match["indent"]):
            stack.pop()
        out.pop(".".join(key for _, key in stack), None)  # its parent is no leaf
        stack.append((len(match["indent"]), match["key"]))
        out[".".join(key for _, key in stack)] = match["rest"].partition(" #")[2].strip() or " ".join(above)
        above = []
    return out


def flatten(
    data: Mapping[str, Any], prefix: str = "", *, keep: Callable[[str], bool] = lambda _: False
) -> dict[str, Any]:
    """Leaf values by dotted key; a mapping is descended into unless `keep(key)` (a dict-valued setting)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value and not keep(name):
            out.update(flatten(value, f"{name}.", keep=keep))
        else:
            out[name] = value
    return out


def lookup(data: Mapping[str, Any], dotted: str) -> Any:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return ABSENT
        node = node[part]
    return node


# ------------------------------------------------------------------------------------------- models


def model_fields(model: type[BaseModel], prefix: str = "") -> dict[str, FieldInfo]:
    """A model's settings by dotted key; a field holding a settings model is a section, walked."""
    out: dict[str, FieldInfo] = {}
    for name, info in model.model_fields.items():
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            out.update(model_fields(info.annotation, f"{prefix}{name}."))
        else:
            out[f"{prefix}{name}"] = info
    return out


_TYPE_NAMES: dict[Any, str] = {str: "str", int: "int", float: "float", bool: "bool", Path: "path", Any: "any"}


def type_name(annotation: Any) -> str:
    """A type as YAML users read it: `int | null`, `path`, `list[str]`."""
    if annotation is type(None) or annotation is None:
        return "null"
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return " | ".join(dict.fromkeys(type_name(type(value)) for value in args))
    if origin is Annotated:
        return type_name(args[0])
    if origin in (Union, types.UnionType):
        return " | ".join(dict.fromkeys(type_name(arg) for arg in args))
    if origin in (list, tuple, set, Sequence):
        return f"list[{type_name(args[0])}]" if args else "list"
    if origin in (dict, Mapping):
        return f"dict[{type_name(args[0])}, {type_name(args[1])}]" if args else "dict"
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "str"
    return _TYPE_NAMES.get(annotation) or str(getattr(annotation, "__name__", annotation))


def choices(annotation: Any) -> list[str]:
    """The values a Literal, an Enum or a registered name (agent.tools) allows, however nested."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return [format_value(value) for value in args]
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return [format_value(member.value) for member in annotation]
    if origin is Annotated:
        if any(getattr(item, "func", None) is known_tool for item in args[1:]):
            return sorted(members("tool"))
        return choices(args[0])
    return [value for arg in args for value in choices(arg)]


_BOUNDS = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤", "min_length": "length ≥", "max_length": "length ≤"}


def bounds(info: FieldInfo) -> str:
    """ge/gt/le/lt, lengths, a pattern and the allowed values of a field, as one short phrase."""
    parts: list[str] = []
    for item in info.metadata:
        parts += [
            f"{sign} {format_value(v)}"
            for a, sign in _BOUNDS.items()
            if (v := getattr(item, a, None)) is not None
        ]
        if (pattern := getattr(item, "pattern", None)) is not None:
            parts.append(f"matches `{pattern}`")
    if allowed := list(dict.fromkeys(choices(info.annotation))):
        each = "each " if get_origin(info.annotation) in (list, tuple, set) else ""
        parts.append(f"{each}one of " + ", ".join(f"`{value}`" for value in allowed))
    return ", ".join(parts)


def _admits_null(annotation: Any) -> bool:
    if annotation is None or annotation is type(None) or annotation is Any:
        return True
    origin = get_origin(annotation)
    if origin is Annotated:
        return _admits_null(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return any(_admits_null(arg) for arg in get_args(annotation))
    return origin is Literal and None in get_args(annotation)


# ---------------------------------------------------------------------------------------- rendering


def format_value(value: Any) -> str:
    """A value as written in YAML flow style (what a user types on the command line)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return format_value(value.value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(format_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key}: {format_value(item)}" for key, item in value.items()) + "}"
    return "''" if value == "" else str(value)


def per_owner(cells: Mapping[str, str], order: Sequence[str], sep: str) -> str:
    """One cell for several options: the value most of them share, then the others by option;
    all different: each option's own."""
    by_value: dict[str, list[str]] = {}
    for owner in order:
        if owner in cells:
            by_value.setdefault(cells[owner], []).append(owner)
    if len(by_value) <= 1:
        return next(iter(by_value), "")
    ranked = sorted(by_value.items(), key=lambda kv: -len(kv[1]))
    common = ranked[0][0] if len(ranked[0][1]) > 1 else None
    rest = [f"*{', '.join(owners)}:* {value}" for value, owners in by_value.items() if value != common]
    return sep.join(([common] if common is not None else []) + rest)


_CODE = re.compile(r"(`[^`]*`)")


def escape(markdown: str, *, cell: bool = True) -> str:
    """Free text for Markdown: `<` cannot open an HTML tag, and in a table `|` cannot end a cell;
    code spans are left as they are (MkDocs keeps a `|` inside them)."""
    parts = _CODE.split(markdown)
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;")
        if cell:
            parts[i] = parts[i].replace("|", "\\|")
    return "".join(parts)


# -------------------------------------------------------------------------------------------- keys


@dataclass(frozen=True)
class Source:
    """What one option of a group contributes to the group's keys."""

    model: type[BaseModel] | None  # None: no model of ours reads its keys (a Hydra plugin's)
    values: Mapping[str, Any]  # its composed values, below `prefix`
    prefix: str = ""  # how its keys start on the command line: `agent.`, `tools.conch.`, ``
    skip: frozenset[str] = frozenset()  # model fields that are config groups of their own sections
    comments: Mapping[str, str] = dataclasses.field(default_factory=dict)  # a model-less key's meaning
    plugin_types: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # their types, from the plugin


def build_keys(sources: Mapping[str, Source], *, roles: bool, anchor_prefix: str = "") -> tuple[Key, ...]:
    """The keys of one group, from each option's model and values. A key is every model field and
    every value's leaf; one that only the values have, or only the model, is still listed with what is
    known of it, and tests/docs reports it."""
    found: dict[str, dict[str, FieldInfo | None]] = {}  # full key -> option -> its field (None: no model)
    flat: dict[str, dict[str, Any]] = {}  # option -> its values by key below its prefix
    for owner, source in sources.items():
        fields = model_fields(source.model) if source.model else {}
        fields = {key: info for key, info in fields.items() if key.split(".")[0] not in source.skip}
        whole = {key for key, info in fields.items() if get_origin(info.annotation) in (dict, Mapping)}
        flat[owner] = flatten(source.values, keep=whole.__contains__)
        for key in flat[owner]:  # conf/'s order first
            found.setdefault(source.prefix + key, {})[owner] = None
        for key, info in fields.items():
            found.setdefault(source.prefix + key, {})[owner] = info
    table = record_roles() if roles else {}
    keys = [_key(name, by_owner, sources, flat, table, anchor_prefix) for name, by_owner in found.items()]
    # Stable: the option's name first (agent.mode), then the keys every option has, in conf/'s order.
    keys.sort(key=lambda key: (key.default != NAMED, -len(key.owners)))
    return tuple(keys)


def _key(
    name: str,
    by_owner: Mapping[str, FieldInfo | None],
    sources: Mapping[str, Source],
    flat: Mapping[str, Mapping[str, Any]],
    table: Mapping[str, Role],
    anchor_prefix: str,
) -> Key:
    order = list(sources)
    owners = tuple(owner for owner in order if owner in by_owner)
    defaults: dict[str, Any] = {}
    kinds, typed, meanings, cells = {}, {}, {}, {}
    for owner in owners:
        source, info = sources[owner], by_owner[owner]
        local = name.removeprefix(source.prefix)
        value = defaults[owner] = flat[owner].get(local, ABSENT)
        cells[owner] = _default_cell(value, info)
        if info is not None:
            kinds[owner], limits, meanings[owner] = type_name(info.annotation), bounds(info), info.description
        else:  # a plugin's key: typed by the plugin's class, else by its value
            plugin = source.plugin_types.get(local, ABSENT)
            by_value = "" if value is None or value is ABSENT else type_name(type(value))
            kinds[owner] = type_name(plugin) if plugin is not ABSENT else by_value
            limits, meanings[owner] = "", source.comments.get(local)
        typed[owner] = ", ".join(filter(None, [f"`{kinds[owner]}`" if kinds[owner] else "—", limits]))
    if len(owners) > 1 and all(value == owner for owner, value in defaults.items()):
        # The discriminator (agent.mode, provider.name): each option sets its own name.
        cells = dict.fromkeys(owners, NAMED)
        typed = dict.fromkeys(owners, f"`{kinds[owners[0]]}`, one of " + ", ".join(f"`{o}`" for o in owners))
    role = role_of(name, table) if table else None
    return Key(
        name=name,
        anchor=name if name.startswith(anchor_prefix) else anchor_prefix + name,
        type_and_bounds=per_owner(typed, order, "; "),
        defaults=defaults,
        default=per_owner(cells, order, "; "),
        owners=owners,
        role=role.value if role is not None else "",
        meaning=per_owner({owner: text for owner, text in meanings.items() if text}, order, " "),
        modelled=tuple(owner for owner in owners if by_owner[owner] is not None),
    )


def _default_cell(value: Any, info: FieldInfo | None) -> str:
    """One option's default as shown: its value; `required` for `???`, or for a `null` the field
    does not take; none in conf/: the model's default, if it has one."""
    required = info is not None and info.is_required()
    if value == MISSING:
        return text("required", value=MISSING)
    if value is None and info is not None and required and not _admits_null(info.annotation):
        return text("required in conf", value="null")
    if value is ABSENT:
        return "—" if info is None or required else text("model default", value=format_value(info.default))
    return f"`{format_value(value)}`"


# ------------------------------------------------------------------------------------------ groups


def _option_group(
    group: str, models: Mapping[str, type[BaseModel] | None], owner_label: str, *, roles: bool = True
) -> Group:
    """A config group, each option composed into the run's config and its keys read from its section
    (`agent.`, a tool's `tools.<name>.`, a launcher's `hydra.launcher.`) with its settings model (the
    same one, or one per option). A launcher has none: its keys are those its file writes, typed by the
    plugin's config class and meant as their comments say. A key an option sets outside its section
    (a `_global_` file's, as conf/server/ has) is noted."""
    base = values("config")
    sources: dict[str, Source] = {}
    notes: list[str] = []
    for name, model in models.items():
        overrides = option_overrides(group, name)
        section = {"tools": f"tools.{name}", "launcher": "hydra.launcher"}.get(group, group)
        own = lookup(values("config", *overrides), section)
        own = own if isinstance(own, Mapping) else {}  # a tool registered in code, with no file
        if model is None:
            written = yaml_keys(CONF_DIR / group / f"{name}.yaml")
            comments = {k.removeprefix(f"{section}."): c for k, c in written.items() if k.startswith(section)}
            plugin = OmegaConf.get_type(OmegaConf.select(composed("config", *overrides), section))
            sources[name] = Source(
                None,
                {key: lookup(own, key) for key in comments},
                prefix=f"{section}.",
                comments=comments,
                plugin_types={f.name: f.type for f in dataclasses.fields(plugin)}  # type: ignore[arg-type]
                if dataclasses.is_dataclass(plugin)
                else {},
            )
        else:
            sources[name] = Source(model, own, prefix=f"{section}.")
        if group not in BATCHED:  # composed alone: what differs from the default run is this option's
            outside = flatten(
                {k: v for k, v in values("config", *overrides).items() if k not in (group, "hydra")}
            )
            notes += [
                text("also sets", option=f"{group}={name}", key=key, value=format_value(value))
                for key, value in outside.items()
                if lookup(base, key) != value
            ]
    keys = build_keys(sources, roles=roles)
    notes += [
        text("no keys", option=f"{group}={name}")
        for name in models
        if not any(name in k.owners for k in keys)
    ]
    return Group(
        id=group,
        keys=keys,
        options=tuple((name, _said(group, name)) for name in models),
        default_option=base["hydra"]["runtime"]["choices"].get(group),
        owner_label="" if all(len(key.owners) == len(models) for key in keys) else owner_label,
        roles=roles,
        notes=tuple(notes),
    )


def _registered(group: str, kind: Kind, owner_label: str) -> Group:
    """A group whose options are registered (giant.registry), in the registry's order, each with its
    settings model; a file in conf/<group>/ that no member has is listed with no model."""
    models: dict[str, type[BaseModel] | None] = dict(settings_models(kind))
    return _option_group(
        group, models | {name: models.get(name) for name in group_options(group)}, owner_label
    )


def _said(group: str, option: str) -> str:
    """What an option is: its file's leading comment."""
    path = CONF_DIR / group / f"{option}.yaml"
    return about_file(path)[0] if path.is_file() else text("no file")


def _own(id_: str, config: str, model: type[BaseModel], section: str = "", *, roles: bool = False) -> Group:
    """The keys of `model` in one composed config (conf/<config>.yaml), or in its `section`: a run's
    top-level keys and paths, an entry point's own keys (its config groups have their own sections)."""
    data = lookup(values(config), section) if section else values(config)
    own = {key: value for key, value in data.items() if key in model.model_fields and key not in GROUP_FIELDS}
    source = Source(model, own, prefix=f"{section}." if section else "", skip=GROUP_FIELDS)
    anchor = "" if roles else f"{id_}."  # an entry point's keys may share a run key's name
    return Group(id=id_, keys=build_keys({config: source}, roles=roles, anchor_prefix=anchor), roles=roles)


def experiment_group() -> Group:
    """The presets: what each sweeps over, the groups it picks and the keys it sets, each against the
    default run (a key of a group it picks, against that option)."""
    base = values("config")
    presets = []
    for name in group_options("experiment"):
        data = values("config", f"experiment={name}")
        picked = {
            group: option
            for group, option in data["hydra"]["runtime"]["choices"].items()
            if group in GROUPS
            and group != "experiment"
            and option != base["hydra"]["runtime"]["choices"][group]
        }
        sets = {}
        for key, value in flatten({k: v for k, v in data.items() if k != "hydra"}).items():
            top = key.partition(".")[0]
            against = values("config", *option_overrides(top, picked[top])) if top in picked else base
            if lookup(against, key) != value:
                sets[key] = value
        params = lookup(data, "hydra.sweeper.params")
        about, example = about_file(CONF_DIR / "experiment" / f"{name}.yaml")
        sweeps = {str(k): str(v) for k, v in params.items()} if isinstance(params, Mapping) else {}
        presets.append(Preset(name=name, about=about, example=example, sweeps=sweeps, sets=sets | picked))
    return Group(id="experiment", presets=tuple(presets))


def _late(module: str, name: str) -> type[BaseModel]:
    """An entry point's settings model, imported when its section is built (the job layer and MLflow
    take seconds to import)."""
    model: type[BaseModel] = getattr(importlib.import_module(module), name)
    return model


BUILDERS: dict[str, Callable[[], Group]] = {
    "run": lambda: _own("run", "config", RunOptions, roles=True),
    "paths": lambda: _own("paths", "config", PathSettings, "paths", roles=True),
    "agent": lambda: _registered("agent", "mode", "Modes"),
    "provider": lambda: _registered("provider", "provider", "Providers"),
    "dataset": lambda: _option_group(
        "dataset", dict.fromkeys(group_options("dataset"), DatasetSettings), "Datasets"
    ),
    "tools": lambda: _registered("tools", "tool", "Tools"),
    "tracking": lambda: _option_group(
        "tracking", dict.fromkeys(group_options("tracking"), TrackingSettings), "Trackers"
    ),
    "server": lambda: _option_group(
        "server", dict.fromkeys(group_options("server"), ServerSettings), "Servers", roles=False
    ),
    "launcher": lambda: _option_group(
        "launcher", dict.fromkeys(group_options("launcher")), "Launchers", roles=False
    ),
    "experiment": experiment_group,
    "ask": lambda: _own("ask", "ask", AskSettings),
    "fetch": lambda: _own("fetch", "fetch", _late("giant.fetch_job", "FetchOptions")),
    "rescore": lambda: _own("rescore", "rescore", _late("giant.rescore_job", "RescoreSettings")),
}


@functools.cache
def groups() -> tuple[Group, ...]:
    """Every section of the reference, in page order."""
    return tuple(build() for build in BUILDERS.values())


# ---------------------------------------------------------------------------------------------- page


def render(selected: Iterable[str] | None = None, *, page: bool = True) -> str:
    """The reference as Markdown, laid out by the template's `page` block. `page`: the site's page
    (front matter, an id on every group and key); off, plain Markdown that reads cleanly in a
    terminal. `selected`: only those sections."""
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters.update(
        cell=escape, md=functools.partial(escape, cell=False), oneline=_oneline, value=format_value
    )
    markdown = env.from_string(prose()["page"]).render(
        page=page,
        whole=selected is None,
        groups=[group for group in groups() if selected is None or group.id in set(selected)],
        roles=list(Role),
        prose=prose(),
        title=lambda group: titled(f"group: {group}")[0],
        paragraphs=lambda group: (titled(f"group: {group}")[1][0], tuple(titled(f"group: {group}")[1][1:])),
        text=text,
        id=lambda anchor, row=False: (
            "" if not page else f'{{#{anchor} style="white-space: nowrap"}}' if row else f" {{#{anchor}}}"
        ),
        yesno=lambda flag: "yes" if flag else "no",
        meaning=_meaning,
    )
    return re.sub(r"\n{3,}", "\n\n", markdown).strip() + "\n"


def _oneline(block: str) -> str:
    return " ".join(paragraphs(block))


def _meaning(group: Group, key: Key) -> str:
    """The Meaning cell: the key's description, then the options that have it (when not all do) and
    its role (when the group's keys differ in role)."""
    meaning = escape(key.meaning) or "**no description**"
    meaning += "" if meaning.endswith((".", "!", "?", "*")) else "."  # a conf/ comment may lack one
    if group.owner_label and len(key.owners) < (len(group.options) or 1):
        meaning += f" *{group.owner_label}: {', '.join(key.owners)}.*"
    if group.roles and len({key.role for key in group.keys}) > 1:
        meaning += " " + (f"Role: `{key.role}`." if key.role else text("no role"))
    return meaning


def main(argv: Sequence[str] | None = None) -> int:
    """Print the reference (plain Markdown) to stdout."""
    parser = argparse.ArgumentParser(
        prog="python scripts/config_reference.py",
        description="Print the configuration reference: every key, its type, default and meaning.",
    )
    parser.add_argument("sections", nargs="*", metavar="SECTION", help=f"only these: {', '.join(BUILDERS)}")
    args = parser.parse_args(argv)
    if unknown := [name for name in args.sections if name not in BUILDERS]:
        parser.error(f"no section {', '.join(unknown)}; choose from {', '.join(BUILDERS)}")
    sys.stdout.write(render(args.sections or None, page=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
