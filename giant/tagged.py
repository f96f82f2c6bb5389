"""A tagged union whose members are registered at run time (the step's actions, the trajectory's tool
records): pydantic's discriminated union is fixed when a model is built, so a tool registered later
(a new one, a test's) would be refused. Validation asks `members()` each time instead, and words its
errors as the discriminated union did, so a reply's error text is unchanged."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, PlainValidator, ValidationError
from pydantic_core import InitErrorDetails


def tagged(tag: str, members: Callable[[], Mapping[str, type[BaseModel]]]) -> PlainValidator:
    """A validator picking the member model by `value[tag]`; an instance of a member passes as is."""

    def validate(value: Any) -> BaseModel:
        known = members()
        if isinstance(value, BaseModel) and type(value) in known.values():
            return value
        if not isinstance(value, dict) or tag not in value:
            raise _error("union_tag_not_found", value, {"discriminator": repr(tag)})
        model = known.get(value[tag])
        if model is None:
            expected = ", ".join(repr(name) for name in known)
            ctx = {"discriminator": repr(tag), "tag": str(value[tag]), "expected_tags": expected}
            raise _error("union_tag_invalid", value, ctx)
        try:
            return model.model_validate(value)
        except ValidationError as exc:  # located under the member's tag, as pydantic's own union does
            details = [
                InitErrorDetails(
                    type=e["type"], loc=(value[tag], *e["loc"]), input=e["input"], ctx=e.get("ctx", {})
                )
                for e in exc.errors()
            ]
            raise ValidationError.from_exception_data(exc.title, details) from None

    return PlainValidator(validate)


def _error(kind: str, value: Any, ctx: dict[str, Any]) -> ValidationError:
    return ValidationError.from_exception_data(
        "tagged union", [InitErrorDetails(type=kind, loc=(), input=value, ctx=ctx)]
    )
