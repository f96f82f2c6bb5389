"""What each setting is for, declared once on its pydantic field, so no list of keys is kept by hand.

Two questions are asked of every setting: does it change the episodes (then it is part of a job's
`config_hash`, the key a rerun resumes by) and does it make two runs different methods (then a
comparison names it as a difference). A setting answers both by its role, written on its field as
`Method[int]`, `Operational[float]`, ...; `roles()` reads them back from the models, and a setting
without one is an error (`UndeclaredRole`), so a new setting must choose.
"""

from __future__ import annotations

import types
from collections.abc import Iterator, Mapping
from enum import Enum
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo


class Role(Enum):
    """A setting's role; `hashed` and `compared` are what the role means to a job and a comparison."""

    METHOD = "method"  # the measured method (agent, model, seed): hashed, a comparison difference
    DATA = "data"  # which data the numbers are over (dataset, skip_missing): hashed; not a method
    REPEATS = "repeats"  # runs per item: runs_per_item=5 continues runs_per_item=1, but x5 is another method
    SCORING = "scoring"  # how answers are scored (giant.eval.scoring_settings): re-scored, not rerun
    SELECTION = "selection"  # which items of the dataset: a pilot grows into the full run
    OPERATIONAL = "operational"  # pacing, retries, keys, paths, tracking: how a job runs

    @property
    def hashed(self) -> bool:
        return self in (Role.METHOD, Role.DATA)

    @property
    def compared(self) -> bool:
        return self in (Role.METHOD, Role.REPEATS, Role.SCORING)


T = TypeVar("T")
Method = Annotated[T, Role.METHOD]
Data = Annotated[T, Role.DATA]
Repeats = Annotated[T, Role.REPEATS]
Scoring = Annotated[T, Role.SCORING]
Selection = Annotated[T, Role.SELECTION]
Operational = Annotated[T, Role.OPERATIONAL]


# The serialization context of a job's record and config hash (giant.config.RunSettings): there a
# settings model may leave out a setting added after runs were paid while it holds the value those
# runs had, so their hash, resume key and MLflow params stay what they were (giant.agent.modes.patch).
RECORD_CONTEXT: dict[str, bool] = {"giant_record": True}


def recording(context: object) -> bool:
    """Whether a serializer runs for the record and the hash (its `info.context`)."""
    return isinstance(context, dict) and bool(context.get("giant_record"))


class UndeclaredRole(TypeError):
    """A setting whose field declares no role (nor does the section holding it)."""


class ConflictingRoles(TypeError):
    """One key with two roles in two members of a union (a provider or a mode)."""


def declared(field: FieldInfo) -> Role | None:
    return next((item for item in field.metadata if isinstance(item, Role)), None)


def roles(model: type[BaseModel] | BaseModel, prefix: str = "") -> dict[str, Role]:
    """Every setting's role by dotted key. A section field with a role gives it to all its settings
    (one key for the section); one without is walked. Given an instance, a union field (the provider,
    the agent) is walked as the member it holds; given a class, every member is walked."""
    cls = model if isinstance(model, type) else type(model)
    out: dict[str, Role] = {}
    for name, field in cls.model_fields.items():
        key = f"{prefix}{name}"
        role = declared(field)
        value = None if isinstance(model, type) else getattr(model, name)
        if role is not None:
            out[key] = role
            continue
        sections = [value] if isinstance(value, BaseModel) else list(_models(field.annotation))
        if not sections:
            raise UndeclaredRole(f"{cls.__name__}.{name} ({key}) declares no role (e.g. Method[int])")
        for section in sections:
            for sub, sub_role in roles(section, f"{key}.").items():
                if out.setdefault(sub, sub_role) is not sub_role:
                    raise ConflictingRoles(
                        f"{sub}: {out[sub].value} in one member, {sub_role.value} in another"
                    )
    return out


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A record as the dotted keys roles are declared under: {"agent": {"max_steps": 20}} ->
    {"agent.max_steps": 20}; lists stay one leaf, an empty section is a leaf too. The one flattening of
    a record, for MLflow's params (giant.tracking.params) and a comparison's settings alike."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def role_of(key: str, table: Mapping[str, Role]) -> Role | None:
    """A dotted key's role: its own, or that of the section holding it; None: no such setting."""
    while key:
        if key in table:
            return table[key]
        key = key.rpartition(".")[0]
    return None


def hashed_part(data: Mapping[str, Any], table: Mapping[str, Role], prefix: str = "") -> dict[str, Any]:
    """`data` (a model's dump) with only its hashed settings; a key with no role is an error, so no
    setting reaches a hash (or escapes one) without choosing."""
    out: dict[str, Any] = {}
    for name, value in data.items():
        key = f"{prefix}{name}"
        role = table.get(key)
        if role is not None:
            if role.hashed:
                out[name] = value
        elif isinstance(value, Mapping):
            out[name] = hashed_part(value, table, f"{key}.")
        else:
            raise UndeclaredRole(f"{key} has no declared role")
    return out


def _models(annotation: Any) -> Iterator[type[BaseModel]]:
    """The settings models a field holds: the type itself, or the members of a union or Optional."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    elif get_origin(annotation) in (Union, types.UnionType, Annotated):
        for arg in get_args(annotation):
            yield from _models(arg)
