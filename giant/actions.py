"""What every action a step may hold has in common: the base the built-in actions (giant.llm.types)
and each registered tool's action (giant.tools) extend. It sits below both, so the provider contract
can derive the step's action union from the tool registry without a tool importing the provider layer.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

NonEmptyStr = Annotated[str, Field(min_length=1)]


class ActionModel(BaseModel):
    """What every action has: the `type` a step's action is told apart by (each action narrows it
    to its own literal)."""

    model_config = ConfigDict(extra="forbid")
    type: str


__all__ = ["ActionModel", "NonEmptyStr"]
