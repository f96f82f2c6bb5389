"""The configuration reference (docs: reference/configuration.md), written from the code so it cannot drift.

A key's type, bounds, role (giant.roles) and meaning (`Field(description=...)`) come from its pydantic
settings model, its default from conf/ as the CLI composes it (giant.confdir.compose), the options from
giant.registry; a Hydra launcher's keys, which no model of ours reads, from the plugin's config class and
their comments in conf/launcher/. The sentences and the layout are the Markdown template beside this
file. Docs tooling: scripts/docs_hooks.py puts the page in every MkDocs build (docs/ holds a placeholder
for readers of the repository); `python scripts/config_reference.py [SECTION ...]` prints it.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import re
import sys
import types
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple, Union, get_args, get_origin, get_type_hints

import jinja2

# A sibling script, imported as scripts/ imports its neighbours (this folder is on sys.path when this
# runs as a script and when MkDocs imports its hook): the settings model of `python scripts/ask.py`.
from ask import AskSettings
from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from giant.confdir import CONF_DIR, compose, group_options
from giant.config import GROUPS, DatasetSettings, PathSettings, RunOptions, TrackingSettings, record_roles
from giant.fetch_job import FetchOptions
from giant.llm.serve import ServerSettings
from giant.registry import Kind, known, members, settings_models
from giant.rescore_job import RescoreSettings
from giant.roles import Role, role_of

MISSING = "???"  # Hydra's mark of a value the user must pass
NAMED = "the option's name"  # the default of a group's discriminator (agent.mode, provider.name)
ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "ABSENT"})()  # a key an option has no value for
GROUP_FIELDS = frozenset({*GROUPS, "paths"})  # an entry point's fields that have sections of their own
TEMPLATE = Path(__file__).with_suffix(".md")  # the page's sentences and layout, by block


class Key(NamedTuple):
    """One setting as the reference shows it."""

    name: str  # as typed on the command line: agent.max_steps, seed, hydra.launcher.n_jobs
    anchor: str  # the HTML id of its row, unique on the page
    type_and_bounds: str  # the Type cell: its type, then its bounds
    defaults: Mapping[str, Any]  # option -> its composed value (interpolations kept); ABSENT: none
    default: str  # the Default cell
    owners: tuple[str, ...]  # the group's options that have the key
    role: str  # giant.roles value; "" for keys outside a run's record
    meaning: str
    modelled: tuple[str, ...]  # the owners whose settings model has the key (not only conf/)


class Preset(NamedTuple):
    """One experiment preset (conf/experiment/<name>.yaml): a sweep, run with -m."""

    name: str
    about: str
    example: str
    sweeps: Mapping[str, str]
    sets: Mapping[str, Any]


class Group(NamedTuple):
    """One section of the page: a config group, the run's top-level keys or an entry point's."""

    id: str  # its anchor and its block in the template
    keys: tuple[Key, ...] = ()
    options: tuple[tuple[str, str], ...] = ()  # (option, what its file says it is)
    default_option: str | None = None
    owner_label: str = ""  # names the options that have a key ("Modes"); "": all have all
    roles: bool = False  # its keys are part of a run's record (giant.roles applies)
    notes: tuple[str, ...] = ()
    presets: tuple[Preset, ...] = ()


class Source(NamedTuple):
    """What one option of a group contributes to the group's keys."""

    model: type[BaseModel] | None  # None: no model of ours reads its keys (a Hydra plugin's)
    values: Mapping[str, Any]  # its composed values, below `prefix`
    prefix: str = ""  # how its keys start on the command line: `agent.`, `tools.conch.`, ``
    skip: frozenset[str] = frozenset()  # model fields that are config groups of their own sections
    # A model-less key's type (from the plugin's config class; ABSENT: unknown) and meaning (its comment).
    plugin: Mapping[str, tuple[Any, str]] = {}


@functools.cache
def prose() -> dict[str, str]:
    """The template's blocks by their marker: `intro`, `roles`, `role: <role>`, `group: <id>`, ..."""
    parts = re.split(r"^<!-- (\S[^>]*?) -->\n", TEMPLATE.read_text(encoding="utf-8"), flags=re.M)
    return {name: block.strip("\n") for name, block in zip(parts[1::2], parts[2::2], strict=True)}


def paragraphs(block: str) -> list[str]:
    """A block's paragraphs, each on one line (a table cell or a terminal reads it so)."""
    return [" ".join(part.split()) for part in re.split(r"\n\s*\n", block) if part.strip()]


def text(name: str, **fields: str) -> str:
    """A sentence of the template (`<!-- text: name -->`) with its `{fields}` filled in."""
    return paragraphs(prose()[f"text: {name}"])[0].format(**fields)


@functools.cache
def composed(config: str, *overrides: str) -> DictConfig:
    return compose(config, overrides)


@functools.cache
def values(config: str, *overrides: str) -> dict[str, Any]:
    """A composition (giant.confdir.compose) as plain data: `${...}` and `???` kept as written."""
    return OmegaConf.to_container(composed(config, *overrides), resolve=False)  # type: ignore[return-value]


# Groups whose options set nothing outside their own section (and `hydra.`): the i-th option of each
# is composed in one go, 7 compositions instead of 23.
BATCHED = ("agent", "provider", "dataset", "launcher")


def option_overrides(group: str, option: str) -> tuple[str, ...]:
    """The overrides of conf/config.yaml that compose `group=option` (tools: `tools: all` always does)."""
    if group not in BATCHED or option not in group_options(group):
        return () if group == "tools" else (f"{group}={option}",)
    i = group_options(group).index(option)
    return tuple(f"{other}={group_options(other)[i % len(group_options(other))]}" for other in BATCHED)


def about_file(path: Path) -> tuple[str, str]:
    """A conf file's leading comment (what it is) and the example command in it (an indented line)."""
    about: list[str] = []
    examples: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        if not re.match(r"#\s*@package\b", line):
            (examples if re.match(r"# {2,}\S", line) else about).append(line[1:].strip())
    joined = " ".join(part for part in about if part).removesuffix("e.g.").rstrip(" ,:;")
    return (joined + "." if joined and joined[-1] not in ".!?" else joined), next(iter(examples), "")


def yaml_keys(path: Path) -> dict[str, str]:
    """Each leaf key a conf file writes, by dotted key, with its comment: the one beside it, else the
    comment lines right above it. Composition drops comments, so the file is read line by line."""
    out: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    above: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("#"):
            above.append(line.strip().lstrip("#").strip())
        elif match := re.match(r"^(?P<indent> *)(?P<key>[A-Za-z_][\w.-]*):(?P<rest>.*)$", line):
            while stack and stack[-1][0] >= len(match["indent"]):
                stack.pop()
            out.pop(".".join(key for _, key in stack), None)  # its parent is no leaf
            stack.append((len(match["indent"]), match["key"]))
            beside = match["rest"].partition(" #")[2].strip()
            out[".".join(key for _, key in stack)], above = beside or " ".join(above), []
        else:
            above = []
    return out


def flatten(data: Mapping[str, Any], prefix: str = "", whole: Collection[str] = ()) -> dict[str, Any]:
    """Leaf values by dotted key; a mapping is descended into unless it is `whole` (a dict setting)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping) and value and f"{prefix}{key}" not in whole:
            out.update(flatten(value, f"{prefix}{key}.", whole))
        else:
            out[f"{prefix}{key}"] = value
    return out


def lookup(data: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        data = data.get(part, ABSENT) if isinstance(data, Mapping) else ABSENT
    return data


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
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation is type(None) or annotation is None:
        return "null"
    if origin is Literal:
        return " | ".join(dict.fromkeys(type_name(type(value)) for value in args))
    if origin in (Union, types.UnionType, Annotated):
        return " | ".join(dict.fromkeys(map(type_name, args[:1] if origin is Annotated else args)))
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
    if origin is Annotated and (names := registered(args[1:])):
        return names
    return [value for arg in (args[:1] if origin is Annotated else args) for value in choices(arg)]


def registered(metadata: Sequence[Any]) -> list[str]:
    """The members of the kind whose name a validator `partial(giant.registry.known, kind)` checks."""
    for item in metadata:
        check = getattr(item, "func", None)
        if isinstance(check, functools.partial) and check.func is known:
            return sorted(members(check.args[0]))
    return []


# A field's constraints as the Type cell writes them, in this order.
_BOUNDS = {
    "gt": "> {}",
    "ge": "≥ {}",
    "lt": "< {}",
    "le": "≤ {}",
    "min_length": "length ≥ {}",
    "max_length": "length ≤ {}",
    "pattern": "matches `{}`",
}


def bounds(info: FieldInfo) -> str:
    """ge/gt/le/lt, lengths, a pattern and the allowed values of a field, as one short phrase."""
    found = [(form, getattr(item, attr, None)) for item in info.metadata for attr, form in _BOUNDS.items()]
    parts = [form.format(format_value(value)) for form, value in found if value is not None]
    if allowed := list(dict.fromkeys(choices(info.annotation) or registered(info.metadata))):
        each = "each " if get_origin(info.annotation) in (list, tuple, set) else ""
        parts.append(f"{each}one of " + ", ".join(f"`{value}`" for value in allowed))
    return ", ".join(parts)


def takes_null(annotation: Any) -> bool:
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation in (None, type(None), Any) or (origin is Literal and None in args):
        return True
    inner = args[:1] if origin is Annotated else args if origin in (Union, types.UnionType) else ()
    return any(map(takes_null, inner))


def format_value(value: Any) -> str:
    """A value as written in YAML flow style (what a user types on the command line)."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, Enum):
        return format_value(value.value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(format_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key}: {format_value(item)}" for key, item in value.items()) + "}"
    return "''" if value == "" else str(value)


def escape(markdown: str, *, cell: bool = True) -> str:
    """Free text for Markdown: `<` cannot open an HTML tag, and in a table `|` cannot end a cell;
    code spans are left as they are (MkDocs keeps a `|` inside them)."""
    parts = re.split(r"(`[^`]*`)", markdown)
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;").replace("|", "\\|" if cell else "|")
    return "".join(parts)


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
        flat[owner] = flatten(source.values, whole=whole)
        for key in flat[owner]:  # conf/'s order first
            found.setdefault(source.prefix + key, {})[owner] = None
        for key, info in fields.items():
            found.setdefault(source.prefix + key, {})[owner] = info
    table, keys = record_roles() if roles else {}, []
    for name, by_owner in found.items():
        owners = tuple(by_owner)  # in the group's order of options
        local = {owner: name.removeprefix(sources[owner].prefix) for owner in owners}
        defaults = {owner: flat[owner].get(local[owner], ABSENT) for owner in owners}
        cells = [_cells(sources[owner], local[owner], by_owner[owner], defaults[owner]) for owner in owners]
        typed, shown, meanings = (
            dict(zip(owners, column, strict=True)) for column in zip(*cells, strict=True)
        )
        if len(owners) > 1 and all(value == owner for owner, value in defaults.items()):
            # The discriminator (agent.mode, provider.name): each option sets its own name.
            kind = type_name(getattr(by_owner[owners[0]], "annotation", str))
            typed = dict.fromkeys(owners, f"`{kind}`, one of " + ", ".join(f"`{owner}`" for owner in owners))
            shown = dict.fromkeys(owners, NAMED)
        role = getattr(role_of(name, table) if table else None, "value", "")
        anchor = name if name.startswith(anchor_prefix) else anchor_prefix + name
        said = per_owner({owner: meaning for owner, meaning in meanings.items() if meaning}, " ")
        modelled = tuple(owner for owner in owners if by_owner[owner] is not None)
        typed_cell, default_cell = per_owner(typed, "; "), per_owner(shown, "; ")
        keys.append(Key(name, anchor, typed_cell, defaults, default_cell, owners, role, said, modelled))
    # Stable: the option's name first (agent.mode), then the keys every option has, in conf/'s order.
    return tuple(sorted(keys, key=lambda key: (key.default != NAMED, -len(key.owners))))


def _cells(source: Source, local: str, info: FieldInfo | None, value: Any) -> tuple[str, str, str]:
    """One option's Type, Default and Meaning of a key. A default is `required` for `???` or for a
    `null` its field does not take; none in conf/: the model's default, if it has one."""
    if value == MISSING:
        default = text("required", value=MISSING)
    elif value is ABSENT:
        has = info is not None and not info.is_required()
        default = text("model default", value=format_value(getattr(info, "default", None))) if has else "—"
    elif value is None and info is not None and info.is_required() and not takes_null(info.annotation):
        default = text("required in conf", value="null")
    else:
        default = f"`{format_value(value)}`"
    if info is not None:
        typed = ", ".join(filter(None, [f"`{type_name(info.annotation)}`", bounds(info)]))
        return typed, default, info.description or ""
    # A plugin's key: typed by the plugin's config class, else by its value.
    kind, comment = source.plugin.get(local, (ABSENT, ""))
    kind = kind if kind is not ABSENT else None if value is None or value is ABSENT else type(value)
    return (f"`{type_name(kind)}`" if kind is not None else "—"), default, comment


def per_owner(cells: Mapping[str, str], sep: str) -> str:
    """One cell for several options: the value most of them share, then the others by option;
    all different: each option's own."""
    by_value: dict[str, list[str]] = {}
    for owner, cell in cells.items():
        by_value.setdefault(cell, []).append(owner)
    common = max(by_value, key=lambda cell: len(by_value[cell]), default="")
    shared = [common] if len(by_value) == 1 or len(by_value.get(common, ())) > 1 else []
    rest = [f"*{', '.join(owners)}:* {cell}" for cell, owners in by_value.items() if cell not in shared]
    return sep.join(shared + rest)


def option_group(
    group: str, models: Kind | type[BaseModel] | None, owner_label: str, roles: bool = True
) -> Group:
    """A config group: each option composed into the run's config, its keys read from its section
    (`agent.`, a tool's `tools.<name>.`, a launcher's `hydra.launcher.`) with its settings model: a
    registered member's (`models` a kind; the registry's order first), else `models`. A launcher has
    none: its keys are those its file writes, typed by the plugin's config class. A key an option sets
    outside its section (a `_global_` file's, as conf/server/ has) is noted."""
    found = settings_models(models) if isinstance(models, str) else {}
    default = None if isinstance(models, str) else models
    options = found | {name: found.get(name, default) for name in group_options(group)}
    base, sources, notes = values("config"), {}, []
    for name, model in options.items():
        overrides = option_overrides(group, name)
        section = {"tools": f"tools.{name}", "launcher": "hydra.launcher"}.get(group, group)
        data = values("config", *overrides)
        own = lookup(data, section)
        own = own if isinstance(own, Mapping) else {}  # a tool registered in code, with no file
        plugin: dict[str, tuple[Any, str]] = {}
        if model is None:
            written = yaml_keys(CONF_DIR / group / f"{name}.yaml")
            comments = {k.removeprefix(f"{section}."): c for k, c in written.items() if k.startswith(section)}
            node = OmegaConf.get_type(OmegaConf.select(composed("config", *overrides), section))
            hints = get_type_hints(node) if dataclasses.is_dataclass(node) else {}
            plugin = {key: (hints.get(key, ABSENT), comment) for key, comment in comments.items()}
            own = {key: lookup(own, key) for key in comments}
        sources[name] = Source(model, own, f"{section}.", plugin=plugin)
        if group not in BATCHED:  # composed alone: what differs from the default run is this option's
            outside = flatten({k: v for k, v in data.items() if k not in (group, "hydra")})
            also = {key: value for key, value in outside.items() if lookup(base, key) != value}
            notes += [
                text("also sets", option=f"{group}={name}", key=k, value=format_value(v))
                for k, v in also.items()
            ]
    keys = build_keys(sources, roles=roles)
    notes += [
        text("no keys", option=f"{group}={name}")
        for name in options
        if not any(name in k.owners for k in keys)
    ]
    files = {name: CONF_DIR / group / f"{name}.yaml" for name in options}
    return Group(
        id=group,
        keys=keys,
        options=tuple(
            (name, about_file(file)[0] if file.is_file() else text("no file")) for name, file in files.items()
        ),
        default_option=base["hydra"]["runtime"]["choices"].get(group),
        owner_label="" if all(len(key.owners) == len(options) for key in keys) else owner_label,
        roles=roles,
        notes=tuple(notes),
    )


def own_keys(id_: str, config: str, model: type[BaseModel], section: str = "", roles: bool = False) -> Group:
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
    base, presets = values("config"), []
    for name in group_options("experiment"):
        data = values("config", f"experiment={name}")
        chosen, default = data["hydra"]["runtime"]["choices"], base["hydra"]["runtime"]["choices"]
        picked = {g: chosen[g] for g in GROUPS if g != "experiment" and chosen.get(g) != default.get(g)}
        sets = {}
        for key, value in flatten({k: v for k, v in data.items() if k != "hydra"}).items():
            top = key.partition(".")[0]
            against = values("config", *option_overrides(top, picked[top])) if top in picked else base
            if lookup(against, key) != value:
                sets[key] = value
        about, example = about_file(CONF_DIR / "experiment" / f"{name}.yaml")
        sweeps = {str(k): str(v) for k, v in (data["hydra"]["sweeper"].get("params") or {}).items()}
        presets.append(Preset(name, about, example, sweeps, sets | picked))
    return Group(id="experiment", presets=tuple(presets))


BUILDERS: dict[str, Callable[[], Group]] = {
    "run": lambda: own_keys("run", "config", RunOptions, roles=True),
    "paths": lambda: own_keys("paths", "config", PathSettings, "paths", roles=True),
    "agent": lambda: option_group("agent", "mode", "Modes"),
    "provider": lambda: option_group("provider", "provider", "Providers"),
    "dataset": lambda: option_group("dataset", DatasetSettings, "Datasets"),
    "tools": lambda: option_group("tools", "tool", "Tools"),
    "tracking": lambda: option_group("tracking", TrackingSettings, "Trackers"),
    "server": lambda: option_group("server", ServerSettings, "Servers", roles=False),
    "launcher": lambda: option_group("launcher", None, "Launchers", roles=False),
    "experiment": experiment_group,
    "ask": lambda: own_keys("ask", "ask", AskSettings),
    "fetch": lambda: own_keys("fetch", "fetch", FetchOptions),
    "rescore": lambda: own_keys("rescore", "rescore", RescoreSettings),
}


@functools.cache
def groups() -> tuple[Group, ...]:
    """Every section of the reference, in page order."""
    return tuple(build() for build in BUILDERS.values())


def render(selected: Iterable[str] | None = None, *, page: bool = True) -> str:
    """The reference as Markdown, laid out by the template's `page` block: the site's page (front
    matter, an id on every group and key), or (`page` off) plain Markdown for a terminal."""
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters.update(cell=escape, md=functools.partial(escape, cell=False), value=format_value)
    env.filters.update(oneline=lambda block: " ".join(paragraphs(block)), paragraphs=paragraphs)
    markdown = env.from_string(prose()["page"]).render(
        page=page,
        whole=selected is None,
        groups=[group for group in groups() if selected is None or group.id in set(selected)],
        roles=list(Role),
        prose=prose(),
        text=text,
    )
    return re.sub(r"\n{3,}", "\n\n", markdown).strip() + "\n"


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
