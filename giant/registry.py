"""One registry for what a run picks by name: agent modes (`agent=<mode>`), providers
(`provider=<name>`), tools (`agent.tools=[<name>]`), dataset loaders (`dataset.source`) and metrics
(a task's metric; every registered metric is scored and logged under its name).

A member is registered under its kind and name with one decorator, `@register(kind)`, and each kind's
members live in one folder, its home: every module or package there that is not part of the kind's
contract is imported the first time the kind is read (`members`), whatever was imported before. So
adding a mode, provider, tool, loader or metric is one module or package in its home (plus its conf/
YAML file, where the kind has settings), named nowhere else, and no import order can leave a member out.

Each kind's settings are derived the same way (`settings_models`): a member's `settings` model (a
provider's member is its settings model); the run's config joins them as a union told apart by one
field (`settings_union`: agent modes by `mode`, providers by `name`) or, for tools, as one optional
field each (giant.tools.settings). This module imports nothing of giant: the homes are imported by
name, so every layer may read the registry.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from typing import Annotated, Any, Literal, TypeVar, Union

from pydantic import BaseModel, Field

Kind = Literal["mode", "provider", "tool", "loader", "metric"]

# Each kind's home package and the modules there that hold its contract rather than a member.
HOMES: dict[Kind, tuple[str, frozenset[str]]] = {
    "mode": ("giant.agent.modes", frozenset({"base"})),
    "provider": ("giant.llm.providers", frozenset()),
    "tool": ("giant.tools", frozenset({"base", "registry", "scorer", "settings"})),
    "loader": ("giant.data.loaders", frozenset({"base"})),
    "metric": ("giant.eval.metrics", frozenset({"base"})),
}
# The kinds whose members are used as objects: their class is registered as its one instance.
INSTANCES: frozenset[Kind] = frozenset({"mode", "loader", "metric"})

_members: dict[Kind, dict[str, Any]] = {kind: {} for kind in HOMES}
_found: set[Kind] = set()
_finding: set[Kind] = set()

T = TypeVar("T")


def add(kind: Kind, name: str, member: Any) -> None:
    """Register `member` as `name` of `kind` (the same name twice is an error)."""
    if name in _members[kind]:
        raise ValueError(f"{kind} '{name}' is registered twice")
    _members[kind][name] = member


def register(kind: Kind, name: str | None = None) -> Callable[[T], T]:
    """Class decorator: register the class (its instance, for the kinds in INSTANCES) as `name` of
    `kind` (None: its `name` attribute)."""

    def decorate(cls: T) -> T:
        member = cls() if kind in INSTANCES else cls  # type: ignore[operator]
        add(kind, name if name is not None else _own_name(cls), member)
        return cls

    return decorate


def _own_name(cls: Any) -> str:
    """A class's registered name: its `name` attribute, or the Literal its `name` field holds."""
    name = getattr(cls, "name", None)
    if isinstance(name, str):
        return name
    (literal,) = getattr(cls.model_fields["name"].annotation, "__args__", (None,))
    return str(literal)


def unregister(kind: Kind, name: str) -> None:
    """Drop a member (tests that register a throwaway one clean up with this)."""
    _members[kind].pop(name, None)


def _find(kind: Kind) -> None:
    """Import the kind's home folder (sorted: the union's order), once."""
    if kind in _found:
        return
    home, contract = HOMES[kind]
    if kind in _finding:
        raise ImportError(
            f"a module of {home} reads the {kind} registry while its members are being imported: it "
            "imports, at its top, a module built from the registry (giant.config, giant.tools.settings, "
            "the settings union); import that inside the function that needs it"
        )
    # The home package first: one that builds a settings union at import (giant.llm.providers imports
    # giant.llm.config) reads the registry itself, and that read finds the members.
    importlib.import_module(home)
    if kind in _found:
        return
    _finding.add(kind)
    try:
        for found in pkgutil.iter_modules(importlib.import_module(home).__path__):
            if found.name not in contract and not found.name.startswith("_"):
                importlib.import_module(f"{home}.{found.name}")
        _found.add(kind)
    finally:
        _finding.discard(kind)


class Members(Mapping[str, Any]):
    """The members of one kind by name, in registration order; reading it first imports the home."""

    def __init__(self, kind: Kind) -> None:
        self.kind = kind

    def __getitem__(self, name: str) -> Any:
        _find(self.kind)
        return _members[self.kind][name]

    def __iter__(self) -> Iterator[str]:
        _find(self.kind)
        return iter(list(_members[self.kind]))

    def __len__(self) -> int:
        _find(self.kind)
        return len(_members[self.kind])

    def __repr__(self) -> str:
        return f"{self.kind}s({', '.join(self)})"


def members(kind: Kind) -> Members:
    return Members(kind)


def known(kind: Kind, name: str) -> str:
    """`name` when a member of `kind` has it (a validator's check); else a ValueError line naming them."""
    if name not in (found := members(kind)):
        raise ValueError(f"unknown {kind} {name!r}; use one of {', '.join(found)}")
    return name


def settings_models(kind: Kind) -> dict[str, type[BaseModel]]:
    """Each member's settings model by name: its `settings`, or the member itself when it is one."""
    return {
        name: member if isinstance(member, type) and issubclass(member, BaseModel) else member.settings
        for name, member in members(kind).items()
    }


def settings_union(kind: Kind, tag: str) -> Any:
    """The union of every member's settings model, told apart by the field `tag` (pydantic's
    discriminated union: one member validates, and an error names that member's fields)."""
    return Annotated[Union[tuple(settings_models(kind).values())], Field(discriminator=tag)]  # noqa: UP007


def owners(kind: Kind, setting: str) -> list[str]:
    """The members whose settings have `setting` (for the one-line error on another member's key)."""
    return [name for name, model in settings_models(kind).items() if setting in model.model_fields]


__all__ = [
    "HOMES",
    "INSTANCES",
    "Kind",
    "Members",
    "add",
    "known",
    "members",
    "owners",
    "register",
    "settings_models",
    "settings_union",
    "unregister",
]
