"""The configuration reference, written from the code so it cannot drift from it.

Every key a user can set is read from where it is defined: its name, type, bounds, role (giant.roles)
and one-line meaning (`Field(description=...)`) from the pydantic settings models, its default from
conf/, where every default lives (the models hold types and checks only). Keys that no model of ours
reads (the Hydra launcher plugins' `hydra.launcher.*`) take their type from the plugin's config class
and their meaning from the comment beside them in conf/launcher/. Nothing here lists keys by hand: a
new setting appears in the reference as soon as its model and its YAML have it.

Docs tooling, not runtime: the MkDocs hook scripts/docs_hooks.py writes the page
`reference/configuration.md` from `render()` on every build (the page is never a file in docs/);
`python scripts/config_reference.py [GROUP ...]` prints it in the terminal. The page's prose is the
Markdown template beside this file (scripts/config_reference.md); the options' lists come from the
registry (giant.registry). tests/docs/ checks every key against the models and conf/ independently.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib.util
import re
import sys
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from omegaconf import OmegaConf
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from giant.confdir import CONF_DIR, PROJECT_ROOT, group_options
from giant.config import DatasetSettings, PathSettings, RunOptions, TrackingSettings, record_roles
from giant.llm.serve import ServerSettings
from giant.registry import Kind, members, settings_models
from giant.roles import Role, role_of
from giant.tools.registry import known_tool

MISSING = "???"  # Hydra's mark of a value the user must pass
NAMED = "the option's name"  # the default of a group's discriminator (agent.mode, provider.name)
ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "ABSENT"})()  # a key an option has no value for


@dataclass(frozen=True)
class Key:
    """One setting as the reference shows it."""

    name: str  # as typed on the command line: agent.max_steps, seed, hydra.launcher.n_jobs
    anchor: str  # the HTML id of its row, unique on the page
    type: str
    bounds: str  # "—": none
    type_and_bounds: str  # both in one cell, as the table shows them
    defaults: Mapping[str, Any]  # option -> its value in conf/ (interpolations kept); ABSENT: none there
    default: str  # the defaults as shown (Markdown)
    owners: tuple[str, ...]  # the group's options that have the key
    role: str  # giant.roles value; "" for keys outside a run's record
    meaning: str
    model_defaults: Mapping[str, Any] = field(default_factory=dict)  # option -> pydantic default or ABSENT
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

    id: str  # its anchor
    title: str = ""  # from scripts/config_reference.md
    about: str = ""  # Markdown paragraph under the title, from scripts/config_reference.md
    keys: tuple[Key, ...] = ()
    options: tuple[tuple[str, str], ...] = ()  # (option, what its file says it is)
    default_option: str | None = None
    owner_label: str = ""  # column naming the options that have a key ("Modes"); "": all have all
    roles: bool = False  # its keys are part of a run's record (giant.roles applies)
    notes: tuple[str, ...] = ()
    presets: tuple[Preset, ...] = ()


# ---------------------------------------------------------------------------------------------- conf/


def load_yaml(path: Path) -> dict[str, Any]:
    """A conf file as plain data, interpolations (`${...}`) and `???` kept as written."""
    data = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    assert isinstance(data, dict), path
    return {str(key): value for key, value in data.items()}


def package_of(path: Path) -> str | None:
    """The file's `# @package` header, if it has one."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if match := re.match(r"#\s*@package\s+(\S+)", line):
            return match[1]
        if line.strip() and not line.startswith("#"):
            break
    return None


def option_values(group: str, option: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """An option's values with its `defaults:` list applied as Hydra applies it, and the groups its
    `override /group: option` entries select. Only the forms conf/ uses are understood (a base file
    `/name@_here_`, a sibling option, `_self_`, `override`); any other entry is an error, so a new form
    is taught here instead of being documented wrongly (tests/docs compares with Hydra's composition)."""
    own = load_yaml(CONF_DIR / group / f"{option}.yaml")
    entries = own.pop("defaults", [])
    merged: dict[str, Any] = {}
    selects: list[tuple[str, str]] = []
    if "_self_" not in entries:
        entries = [*entries, "_self_"]  # Hydra's default: the file's own values last
    for entry in entries:
        if entry == "_self_":
            merged = _merge(merged, own)
        elif isinstance(entry, str) and entry.startswith("/") and entry.endswith("@_here_"):
            merged = _merge(merged, load_yaml(CONF_DIR / f"{entry[1 : -len('@_here_')]}.yaml"))
        elif isinstance(entry, str) and "/" not in entry and "@" not in entry:
            merged = _merge(merged, option_values(group, entry)[0])
        elif isinstance(entry, dict) and len(entry) == 1 and str(next(iter(entry))).startswith("override /"):
            target, choice = next(iter(entry.items()))
            selects.append((str(target).removeprefix("override /"), str(choice)))
        else:
            raise ValueError(f"conf/{group}/{option}.yaml: defaults entry {entry!r} is not understood")
    return merged, selects


def _merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def about_file(path: Path) -> tuple[str, str]:
    """A conf file's leading comment (what it is) and the example command in it, if any."""
    about: list[str] = []
    example = ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        text = line[1:]
        if re.match(r"\s*@package\b", text):
            continue
        if re.match(r" {2,}\S", text):  # an indented line is an example command
            example = example or text.strip()
            continue
        about.append(text.strip())
    joined = " ".join(part for part in about if part).strip().removesuffix("e.g.").rstrip(" ,:;")
    return (joined + "." if joined and joined[-1] not in ".!?" else joined), example


_YAML_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][\w.-]*):(?P<rest>.*)$")


def yaml_comments(path: Path) -> dict[str, str]:
    """The comment of each key of a conf file, by dotted key: the one beside it, else the block of
    comment lines right above it. PyYAML drops comments, so the file is read line by line."""
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
        indent = len(match["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match["key"]))
        beside = match["rest"].partition(" #")[2].strip()
        text = beside or " ".join(above)
        if text:
            out[".".join(key for _, key in stack)] = text
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
    if annotation in _TYPE_NAMES:
        return _TYPE_NAMES[annotation]
    return getattr(annotation, "__name__", str(annotation))


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


_BOUNDS = (
    ("gt", ">"),
    ("ge", "≥"),
    ("lt", "<"),
    ("le", "≤"),
    ("min_length", "length ≥"),
    ("max_length", "length ≤"),
)


def bounds(info: FieldInfo) -> str:
    """ge/gt/le/lt, lengths, a pattern and the allowed values of a field, as one short phrase."""
    parts: list[str] = []
    for item in info.metadata:
        for attr, symbol in _BOUNDS:
            if (value := getattr(item, attr, None)) is not None:
                parts.append(f"{symbol} {format_value(value)}")
        if (pattern := getattr(item, "pattern", None)) is not None:
            parts.append(f"matches `{pattern}`")
    allowed = list(dict.fromkeys(choices(info.annotation)))
    if allowed:
        each = "each " if get_origin(info.annotation) in (list, tuple, set) else ""
        parts.append(f"{each}one of " + ", ".join(f"`{value}`" for value in allowed))
    return ", ".join(parts)


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
    if isinstance(value, str) and value == "":
        return "''"
    return str(value)


def default_cell(value: Any, model_default: Any = ABSENT) -> str:
    """One option's default as shown: the conf/ value, `required` for `???`, else the model's."""
    if isinstance(value, str) and value == MISSING:
        return f"required (`{MISSING}`)"
    if value is ABSENT:
        return "—" if model_default is ABSENT else f"`{format_value(model_default)}` (model)"
    return f"`{format_value(value)}`"


def per_owner(cells: Mapping[str, str], order: Sequence[str], sep: str) -> str:
    """One cell for several options: the value most of them share, then the others by option;
    all different: each option's own."""
    if not cells:
        return ""
    by_value: dict[str, list[str]] = {}
    for owner in order:
        if owner in cells:
            by_value.setdefault(cells[owner], []).append(owner)
    if len(by_value) == 1:
        return next(iter(by_value))
    ranked = sorted(by_value.items(), key=lambda kv: -len(kv[1]))
    common = ranked[0][0] if len(ranked[0][1]) > 1 else None
    rest = [f"*{', '.join(owners)}:* {value}" for value, owners in by_value.items() if value != common]
    return sep.join(([common] if common is not None else []) + rest)


_CODE = re.compile(r"(`[^`]*`)")


def escape(text: str, *, cell: bool = True) -> str:
    """Free text for Markdown: `<` cannot open an HTML tag, and in a table `|` cannot end a cell;
    code spans are left as they are (MkDocs keeps a `|` inside them)."""
    parts = _CODE.split(text)
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
    values: Mapping[str, Any]  # its values in conf/, below `prefix`
    prefix: str = ""  # how its keys start on the command line: `agent.`, `tools.conch.`, ``
    skip: frozenset[str] = frozenset()  # model fields that are config groups of their own sections
    # The meaning of a key no model has: its comment in conf/ (the tests still report such a key).
    comments: Mapping[str, str] = field(default_factory=dict)
    plugin_types: Mapping[str, Any] = field(default_factory=dict)  # their types, from the plugin


def build_keys(sources: Mapping[str, Source], *, roles: bool, anchor_prefix: str = "") -> tuple[Key, ...]:
    """The keys of one group, from each option's model and values. A key is every model field and
    every YAML leaf; one that only the YAML has, or only the model, is still listed with what is known
    of it, and tests/docs reports it."""
    order = list(sources)
    found: dict[str, dict[str, FieldInfo | None]] = {}  # full key -> option -> its field (None: no model)
    for owner, source in sources.items():
        fields = {}
        if source.model is not None:
            fields = {
                k: v for k, v in model_fields(source.model).items() if k.split(".")[0] not in source.skip
            }
        whole = {name for name, info in fields.items() if get_origin(info.annotation) in (dict, Mapping)}
        for name in flatten(source.values, keep=whole.__contains__):  # conf/'s order first
            found.setdefault(source.prefix + name, {})[owner] = None
        for name, info in fields.items():
            found.setdefault(source.prefix + name, {})[owner] = info
    table = record_roles() if roles else {}
    keys = [_key(name, by_owner, sources, order, table, anchor_prefix) for name, by_owner in found.items()]
    # Stable: the option's name first (agent.mode), then the keys every option has, in conf/'s order.
    keys.sort(key=lambda key: (key.default != NAMED, -len(key.owners)))
    return tuple(keys)


def _key(
    name: str,
    by_owner: Mapping[str, FieldInfo | None],
    sources: Mapping[str, Source],
    order: Sequence[str],
    table: Mapping[str, Role],
    anchor_prefix: str,
) -> Key:
    owners = tuple(owner for owner in order if owner in by_owner)
    defaults: dict[str, Any] = {}
    defaults_shown: dict[str, str] = {}  # a default shown otherwise than as its value
    types_, limits, meanings, model_defaults = {}, {}, {}, {}
    for owner in owners:
        source, info = sources[owner], by_owner[owner]
        local = name.removeprefix(source.prefix)
        defaults[owner] = lookup(source.values, local)
        if info is not None:
            types_[owner] = f"`{type_name(info.annotation)}`"
            limits[owner] = bounds(info) or "—"
            meanings[owner] = info.description or ""
            model_defaults[owner] = ABSENT if info.is_required() else info.default
            if defaults[owner] is None and info.is_required() and not _admits_null(info.annotation):
                defaults_shown[owner] = "required (`null` in conf/)"
        else:
            plugin = source.plugin_types.get(local, ABSENT)
            shown = type_name(plugin) if plugin is not ABSENT else _value_type(defaults[owner])
            types_[owner] = f"`{shown}`" if shown else "—"
            limits[owner] = "—"
            meanings[owner] = source.comments.get(local, "")
            model_defaults[owner] = ABSENT
    shown_bounds = per_owner(limits, order, "; ")
    typed = {
        owner: types_[owner] + ("" if limits[owner] == "—" else f", {limits[owner]}") for owner in owners
    }
    if len(defaults) > 1 and all(value == owner for owner, value in defaults.items()):
        # The discriminator (agent.mode, provider.name): each option sets its own name.
        shown_default = NAMED
        shown_bounds = "one of " + ", ".join(f"`{owner}`" for owner in owners)
        typed = dict.fromkeys(owners, f"{types_[owners[0]]}, {shown_bounds}")
    else:
        cells = {
            owner: defaults_shown.get(owner) or default_cell(value, model_defaults[owner])
            for owner, value in defaults.items()
        }
        shown_default = per_owner(cells, order, "; ")
    role = role_of(name, table) if table else None
    return Key(
        name=name,
        anchor=name if name.startswith(anchor_prefix) else anchor_prefix + name,
        type=per_owner(types_, order, "; "),
        bounds=shown_bounds,
        type_and_bounds=per_owner(typed, order, "; "),
        defaults=defaults,
        default=shown_default,
        owners=owners,
        role=role.value if role is not None else "",
        meaning=per_owner({owner: text for owner, text in meanings.items() if text}, order, " "),
        model_defaults=model_defaults,
        modelled=tuple(owner for owner in owners if by_owner[owner] is not None),
    )


def _admits_null(annotation: Any) -> bool:
    if annotation is None or annotation is type(None) or annotation is Any:
        return True
    origin = get_origin(annotation)
    if origin is Annotated:
        return _admits_null(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return any(_admits_null(arg) for arg in get_args(annotation))
    return origin is Literal and None in get_args(annotation)


def _value_type(value: Any) -> str:
    """The type of a value no model types (a plugin key whose class is unknown); "" for null."""
    if value is None or value is ABSENT:
        return ""
    if isinstance(value, list | dict):
        return type(value).__name__
    return type_name(type(value))


# ------------------------------------------------------------------------------------------ groups

_ENTRY_KEYS_ELSEWHERE = ("defaults", "hydra", "paths")  # an entry config's keys that are not its own
GROUP_FIELDS = frozenset({"provider", "agent", "tools", "tracking", "dataset", "paths", "server"})


def _options(group: str, registered: Sequence[str] = ()) -> list[str]:
    """A group's options: the registry's (in its order), then any other file in conf/<group>/."""
    return [*registered, *(name for name in group_options(group) if name not in registered)]


def _picked(entry: str) -> dict[str, str | None]:
    """The group options an entry config (config.yaml, ask.yaml) picks in its defaults list."""
    picked: dict[str, str | None] = {}
    for item in load_yaml(CONF_DIR / f"{entry}.yaml").get("defaults", []):
        if isinstance(item, dict):
            picked.update({str(k): (None if v is None else str(v)) for k, v in item.items()})
    return picked


def _option_list(group: str, names: Iterable[str]) -> tuple[tuple[str, str], ...]:
    out = []
    for name in names:
        path = CONF_DIR / group / f"{name}.yaml"
        out.append((name, about_file(path)[0] if path.is_file() else "Registered in code; no file in conf/."))
    return tuple(out)


def _option_group(
    group: str,
    models: Mapping[str, type[BaseModel] | None],
    *,
    owner_label: str,
    roles: bool,
) -> Group:
    """A config group whose options each have a settings model (the same one, or one per option).
    An option's keys sit where its `# @package` puts them: its group (`agent.`), a path of its own
    (`tools.conch.`), or `_global_` (the file names the section, as conf/server/ does); a global file's
    other sections are noted ("also sets")."""
    sources: dict[str, Source] = {}
    notes: list[str] = []
    for name, model in models.items():
        path = CONF_DIR / group / f"{name}.yaml"
        data = option_values(group, name)[0] if path.is_file() else {}
        package = (package_of(path) if path.is_file() else None) or group
        if package == "_global_":
            own = data.get(group, {})
            for section, value in data.items():
                if section != group and isinstance(value, Mapping):
                    notes += [
                        f"`{group}={name}` also sets `{key}` to `{format_value(item)}`."
                        for key, item in flatten(value, f"{section}.").items()
                    ]
            package = group
        else:
            own = data
        comments = yaml_comments(path) if path.is_file() else {}
        if package == group and package_of(path) == "_global_":
            comments = {k.removeprefix(f"{group}."): v for k, v in comments.items()}
        sources[name] = Source(model, own, prefix=f"{package}.", comments=comments)
    keys = build_keys(sources, roles=roles)
    every = all(len(key.owners) == len(models) for key in keys)
    return Group(
        id=group,
        keys=keys,
        options=_option_list(group, models),
        default_option=_picked("config").get(group),
        owner_label="" if every else owner_label,
        roles=roles,
        notes=tuple(notes),
    )


def run_group() -> Group:
    values = load_yaml(CONF_DIR / "config.yaml")
    own = {key: value for key, value in values.items() if key not in _ENTRY_KEYS_ELSEWHERE}
    return Group(
        id="run",
        keys=build_keys(
            {"config": Source(RunOptions, own, comments=yaml_comments(CONF_DIR / "config.yaml"))}, roles=True
        ),
        roles=True,
    )


def paths_group() -> Group:
    values = load_yaml(CONF_DIR / "config.yaml")["paths"]
    return Group(
        id="paths",
        keys=build_keys({"config": Source(PathSettings, values, prefix="paths.")}, roles=True),
        roles=True,
    )


def _registered(group: str, kind: Kind, owner_label: str) -> Group:
    """A group whose options are registered (giant.registry): each with its settings model."""
    models = settings_models(kind)
    names = _options(group, list(models))
    return _option_group(
        group, {name: models.get(name) for name in names}, owner_label=owner_label, roles=True
    )


def dataset_group() -> Group:
    return _option_group(
        "dataset",
        dict.fromkeys(_options("dataset"), DatasetSettings),
        owner_label="Datasets",
        roles=True,
    )


def tracking_group() -> Group:
    return _option_group(
        "tracking",
        dict.fromkeys(_options("tracking"), TrackingSettings),
        owner_label="Trackers",
        roles=True,
    )


def server_group() -> Group:
    return _option_group(
        "server",
        dict.fromkeys(_options("server"), ServerSettings),
        owner_label="Servers",
        roles=False,
    )


def launcher_group() -> Group:
    """The Hydra launchers: no model of ours reads them, so a key's type comes from the plugin's
    config class and its meaning from its comment in conf/launcher/."""
    names = _options("launcher")
    sources: dict[str, Source] = {}
    for name in names:
        data, selects = option_values("launcher", name)
        launcher = lookup(data, "hydra.launcher")
        comments = yaml_comments(CONF_DIR / "launcher" / f"{name}.yaml")
        plugin = dict(selects).get("hydra/launcher")
        sources[name] = Source(
            None,
            launcher if isinstance(launcher, Mapping) else {},
            prefix="hydra.launcher.",
            comments={k.removeprefix("hydra.launcher."): v for k, v in comments.items()},
            plugin_types=plugin_fields(plugin) if plugin else {},
        )
    keys = build_keys(sources, roles=False)
    quiet = [name for name in names if not any(name in key.owners for key in keys)]
    return Group(
        id="launcher",
        keys=keys,
        options=_option_list("launcher", names),
        default_option=_picked("config").get("launcher"),
        owner_label="Launchers",
        notes=tuple(f"`launcher={name}` sets no keys of its own." for name in quiet),
    )


def plugin_fields(plugin: str) -> dict[str, Any]:
    """The field types of a Hydra launcher plugin's config class; empty when it is not installed."""
    from hydra.core.config_store import ConfigStore
    from hydra.core.plugins import Plugins

    Plugins.instance()  # registers the installed plugins' configs
    try:
        node = ConfigStore.instance().load(f"hydra/launcher/{plugin}.yaml").node
    except Exception:  # not installed (or renamed): types then come from the values
        return {}
    schema = OmegaConf.get_type(node)
    if not isinstance(schema, type) or not dataclasses.is_dataclass(schema):
        return {}
    return {item.name: item.type for item in dataclasses.fields(schema)}


def experiment_group() -> Group:
    presets = []
    for name in _options("experiment"):
        data, selects = option_values("experiment", name)
        params = lookup(data, "hydra.sweeper.params")
        sets = {key: value for key, value in flatten(data).items() if not key.startswith("hydra.")}
        sets.update({group: choice for group, choice in selects if not group.startswith("hydra")})
        about, example = about_file(CONF_DIR / "experiment" / f"{name}.yaml")
        sweeps = {str(k): str(v) for k, v in params.items()} if isinstance(params, Mapping) else {}
        presets.append(Preset(name=name, about=about, example=example, sweeps=sweeps, sets=sets))
    return Group(
        id="experiment",
        presets=tuple(presets),
    )


def _entry(name: str, model: type[BaseModel], own_keys: Iterable[str] | None = None) -> dict[str, Source]:
    values = load_yaml(CONF_DIR / f"{name}.yaml")
    keep = set(own_keys) if own_keys is not None else set(values) - set(_ENTRY_KEYS_ELSEWHERE)
    own = {key: value for key, value in values.items() if key in keep}
    comments = yaml_comments(CONF_DIR / f"{name}.yaml")
    return {name: Source(model, own, skip=GROUP_FIELDS, comments=comments)}


def ask_group() -> Group:
    return Group(
        id="ask",
        keys=build_keys(_entry("ask", ask_settings()), roles=False, anchor_prefix="ask."),
        notes=(
            "`paths.root` and `paths.output_dir` are as in [paths](#paths); the job folder is under `ask/`.",
        ),
    )


def fetch_group() -> Group:
    from giant.fetch_job import FetchOptions  # late: it imports the job layer

    return Group(
        id="fetch",
        keys=build_keys(
            _entry("fetch", FetchOptions, FetchOptions.model_fields), roles=False, anchor_prefix="fetch."
        ),
    )


def rescore_group() -> Group:
    from giant.rescore_job import RescoreSettings  # late: it imports MLflow (seconds)

    return Group(
        id="rescore",
        keys=build_keys(_entry("rescore", RescoreSettings), roles=False, anchor_prefix="rescore."),
        notes=(
            "`paths.root` and `paths.output_dir` are as in [paths](#paths); the job folder is under "
            "`rescore/`.",
        ),
    )


@functools.cache
def ask_settings() -> type[BaseModel]:
    """`AskSettings` of scripts/ask.py, an entry point rather than a module of the package."""
    path = PROJECT_ROOT / "scripts" / "ask.py"
    spec = importlib.util.spec_from_file_location("giant_scripts_ask", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the model's annotations in its module
    spec.loader.exec_module(module)
    model = module.AskSettings
    assert isinstance(model, type) and issubclass(model, BaseModel)
    return model


BUILDERS: dict[str, Callable[[], Group]] = {
    "run": run_group,
    "paths": paths_group,
    "agent": lambda: _registered("agent", "mode", "Modes"),
    "provider": lambda: _registered("provider", "provider", "Providers"),
    "dataset": dataset_group,
    "tools": lambda: _registered("tools", "tool", "Tools"),
    "tracking": tracking_group,
    "server": server_group,
    "launcher": launcher_group,
    "experiment": experiment_group,
    "ask": ask_group,
    "fetch": fetch_group,
    "rescore": rescore_group,
}


@functools.cache
def groups() -> tuple[Group, ...]:
    """Every section of the reference, in page order."""
    return tuple(
        dataclasses.replace(group, title=title, about=about)
        for group in (build() for build in BUILDERS.values())
        for title, about in [_group_prose(group.id)]
    )


# ---------------------------------------------------------------------------------------------- page

# The site's page hides Material's right-hand table of contents: the tables need the width, and the
# page's own list of sections (below the intro) links every group.
FRONT_MATTER = "---\nhide:\n  - toc\n---\n"

TEMPLATE = Path(__file__).with_suffix(".md")  # the page's prose, by block
_MARKER = re.compile(r"^<!-- (\S[^>]*?) -->\n", re.M)


@functools.cache
def prose() -> dict[str, str]:
    """The template's blocks by marker (`intro`, `roles`, `role: <role>`, `group: <id>`)."""
    parts = _MARKER.split(TEMPLATE.read_text(encoding="utf-8"))
    return {name: text.strip("\n") for name, text in zip(parts[1::2], parts[2::2], strict=True)}


def _paragraph(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _group_prose(group: str) -> tuple[str, str]:
    """A group's title (its block's `## ` line) and paragraph (the rest, on one line)."""
    title, _, about = prose()[f"group: {group}"].partition("\n")
    return title.removeprefix("## "), _paragraph(about)


def render(selected: Iterable[str] | None = None, *, page: bool = True) -> str:
    """The reference as Markdown. `page`: the site's page (front matter, an id on every group and
    key); off, plain Markdown that reads cleanly in a terminal. `selected`: only those sections."""
    chosen = list(groups()) if selected is None else [g for g in groups() if g.id in set(selected)]
    out: list[str] = [FRONT_MATTER] if page else []
    if selected is None:
        out += [prose()["intro"] + "\n", _contents(chosen), _roles_section(page)]
    out += [_section(group, page) for group in chosen]
    return "\n".join(out).rstrip() + "\n"


def _contents(chosen: Sequence[Group]) -> str:
    lines = ["## Sections", ""]
    lines += [f"- [{group.title}](#{group.id}): {_count(group)}" for group in chosen]
    return "\n".join(lines) + "\n"


def _count(group: Group) -> str:
    if group.presets:
        return f"{len(group.presets)} presets"
    return f"{len(group.keys)} key{'s' if len(group.keys) != 1 else ''}"


def _roles_section(page: bool) -> str:
    title, _, about = prose()["roles"].partition("\n")
    lines = [
        title + (" {#roles}" if page else ""),
        "",
        _paragraph(about),
        "",
        "| Role | Hashed | Compared | Meaning |",
        "| --- | --- | --- | --- |",
    ]
    for role in Role:
        hashed, compared = ("yes" if flag else "no" for flag in (role.hashed, role.compared))
        lines.append(f"| `{role.value}` | {hashed} | {compared} | {escape(prose()['role: ' + role.value])} |")
    return "\n".join(lines) + "\n"


def _section(group: Group, page: bool) -> str:
    lines = ["## " + group.title + (f" {{#{group.id}}}" if page else ""), "", escape(group.about, cell=False)]
    shared = {key.role for key in group.keys}
    if group.roles and len(shared) == 1:
        lines[-1] += f" Every key here has the role `{shared.pop()}`."
    lines.append("")
    if group.options:
        for name, about in group.options:
            mark = " (default)" if name == group.default_option else ""
            lines.append(f"- `{group.id}={name}`{mark}: {escape(about, cell=False)}")
        lines.append("")
    if group.presets:
        lines += _presets_table(group, page)
    if group.keys:
        lines += _keys_table(group, page)
    lines += [escape(note, cell=False) for note in group.notes]
    return "\n".join(lines).rstrip() + "\n"


def _keys_table(group: Group, page: bool) -> list[str]:
    """Four columns, so a table fits the page's text column: the type carries its bounds, and the
    meaning ends with the options that have the key (when not all do) and its role (when the group's
    keys differ in role)."""
    lines = ["| Key | Type | Default | Meaning |", "| --- | --- | --- | --- |"]
    every = len(group.options) or 1
    roles_differ = group.roles and len({key.role for key in group.keys}) > 1
    for key in group.keys:
        # An id to link to, and a key that never breaks across lines (Material breaks code in tables).
        anchor = f'{{#{key.anchor} style="white-space: nowrap"}}' if page else ""
        meaning = escape(key.meaning) or "**no description**"
        meaning += "" if meaning.endswith((".", "!", "?", "*")) else "."  # a conf/ comment may lack one
        if group.owner_label and len(key.owners) < every:
            meaning += f" *{group.owner_label}: {', '.join(key.owners)}.*"
        if roles_differ:
            meaning += f" Role: `{key.role}`." if key.role else " Role: none (no settings model has it)."
        row = [f"`{key.name}`{anchor}", escape(key.type_and_bounds), escape(key.default), meaning]
        lines.append("| " + " | ".join(row) + " |")
    return [*lines, ""]


def _presets_table(group: Group, page: bool) -> list[str]:
    lines = ["| Preset | What it runs | Sweeps over | Also sets |", "| --- | --- | --- | --- |"]
    for preset in group.presets:
        anchor = f'{{#experiment.{preset.name} style="white-space: nowrap"}}' if page else ""
        about = escape(preset.about) + (f" Run: `{preset.example}`" if preset.example else "")
        sweeps = "; ".join(f"`{key}`: {escape(value)}" for key, value in preset.sweeps.items()) or "—"
        sets = ", ".join(f"`{key}={format_value(value)}`" for key, value in preset.sets.items()) or "—"
        lines.append(f"| `experiment={preset.name}`{anchor} | {about} | {sweeps} | {sets} |")
    return [*lines, ""]


def main(argv: Sequence[str] | None = None) -> int:
    """Print the reference (plain Markdown) to stdout."""
    parser = argparse.ArgumentParser(
        prog="python scripts/config_reference.py",
        description="Print the configuration reference: every key, its type, default and meaning.",
    )
    parser.add_argument("sections", nargs="*", metavar="SECTION", help=f"only these: {', '.join(BUILDERS)}")
    args = parser.parse_args(argv)
    unknown = [name for name in args.sections if name not in BUILDERS]
    if unknown:
        parser.error(f"no section {', '.join(unknown)}; choose from {', '.join(BUILDERS)}")
    sys.stdout.write(render(args.sections or None, page=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
