"""Which MLflow metrics a record's fields are logged as, declared once on each field (an `MlflowName` in
its `Annotated` type, or in a property's return type), and the writer and reader both generated from
that declaration: `logged_values` turns a record into (name, value, step) triples, `read_logged` turns
a run's metrics back into the record's values by path ("metric.mean", "totals.calls_paid", ...). So a
field's MLflow name cannot be written one way and read back another (the names: giant.record.names)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Annotated, Any, NamedTuple, get_args, get_origin, get_type_hints

from pydantic import BaseModel


@dataclass(frozen=True, eq=False)
class MlflowName:
    """How one field (or property) goes to MLflow: exactly one of `name`, `parts`, `prefix` is set."""

    name: str = ""  # a number: this metric; a list: this metric, one step per element from `first_step`
    # a model: its attributes (fields or properties) -> their metrics; a model used in several places
    # (a Bootstrap) is named where it is used
    parts: Mapping[str, str] = field(default_factory=dict)
    # a mapping: one metric per key, `<prefix><key>`; a model: one per field, `<prefix><field>`, a number
    # as its value, a list one step per element, a nested model by its attributes' `suffixes`
    prefix: str = ""
    suffixes: Mapping[str, str] = field(default_factory=dict)
    first_step: int = 0
    score: bool = False  # states a score: a run halted by a setup failure logs none of these


class Logged(NamedTuple):
    name: str
    value: float
    step: int | None  # None: a plain metric (step 0); else the element's step of a by-step list
    score: bool


@cache
def declarations(model: type[BaseModel]) -> dict[str, MlflowName]:
    """The model's fields and properties that go to MLflow, by attribute name (read once per model)."""
    found = {
        name: mark
        for name, info in model.model_fields.items()
        for mark in info.metadata
        if isinstance(mark, MlflowName)
    }
    for klass in reversed(model.__mro__[: model.__mro__.index(BaseModel)]):  # pydantic's own left out
        for name, attr in vars(klass).items():
            if isinstance(attr, property) and attr.fget is not None:
                returned = get_type_hints(attr.fget, include_extras=True).get("return")
                if get_origin(returned) is Annotated:
                    found.update(
                        (name, mark) for mark in get_args(returned)[1:] if isinstance(mark, MlflowName)
                    )
    return found


def logged_values(record: BaseModel) -> Iterator[Logged]:
    """Every metric the record's declarations name, with its value; None values are left out."""
    for attr, mark in declarations(type(record)).items():
        yield from _values(getattr(record, attr), mark)


def _values(value: Any, mark: MlflowName) -> Iterator[Logged]:
    if value is None:
        return
    if isinstance(value, BaseModel) and mark.parts:
        for attr, name in mark.parts.items():
            if (part := getattr(value, attr)) is not None:
                yield Logged(name, float(part), None, mark.score)
    elif isinstance(value, BaseModel):  # under a prefix, field by field
        for name, part in value:
            key = mark.prefix + name
            nested = {attr: key + suffix for attr, suffix in mark.suffixes.items()}
            yield from _values(part, replace(mark, name=key, parts=nested, prefix="", suffixes={}))
    elif isinstance(value, Mapping):
        yield from (Logged(mark.prefix + key, float(v), None, mark.score) for key, v in value.items())
    elif isinstance(value, list):
        steps = enumerate(value, mark.first_step)
        yield from (Logged(mark.name, float(v), n, mark.score) for n, v in steps if v is not None)
    elif isinstance(value, int | float):
        yield Logged(mark.name, float(value), None, mark.score)


def read_logged(model: type[BaseModel], metrics: Mapping[str, float]) -> dict[str, float]:
    """A run's metrics as the record's values by path (`<field>` or `<field>.<part>`), through the same
    declarations that wrote them; a metric no declaration names is left out."""
    out: dict[str, float] = {}
    for attr, mark in declarations(model).items():
        if mark.parts:
            out.update(
                {f"{attr}.{part}": metrics[name] for part, name in mark.parts.items() if name in metrics}
            )
        elif mark.prefix:
            found = {
                name.removeprefix(mark.prefix): v
                for name, v in metrics.items()
                if name.startswith(mark.prefix)
            }
            out.update({f"{attr}.{name}": v for name, v in found.items()})
        elif mark.name in metrics:
            out[attr] = metrics[mark.name]
    return out
