"""The tool contract: everything outside giant/tools/ asks a registered tool class or a loaded tool.

A tool is one `Tool` subclass with `@register("tool")` (giant.registry). The class says what the rest of
the project derives from it: its settings (`tools.<name>.*`), the action the model sends (it joins the
step's action union and schema), the record the trajectory keeps of a call, and how pages show that
record. An instance is the tool loaded for one run (its weights): built once by `load`, handed to every
episode, where the navigation loop asks it for its prompt paragraph and runs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Self, TypeVar

from pydantic import BaseModel

from giant.actions import ActionModel
from giant.core import Box, EncodedImage

if TYPE_CHECKING:
    from giant.wsi.slide import Fill, Slide


# The hints of a tool whose action names a level-0 region as a crop does (x, y, width, height): one
# wording for every such tool, so the schema reads the same whichever of them a run offers.
REGION_HINTS = {
    "x": "crop, cells and caption: left edge, level-0 pixels (null for other actions).",
    "y": "crop, cells and caption: top edge, level-0 pixels (null for other actions).",
    "width": "crop, cells and caption: width, level-0 pixels (null for other actions).",
    "height": "crop, cells and caption: height, level-0 pixels (null for other actions).",
}


class ToolRecord(BaseModel):
    """One executed tool call as the trajectory keeps it; a tool's record model adds its result."""

    call_index: int  # the provider call that asked for it
    tool: str  # the registered tool's name


class UnusableCall(Exception):
    """A tool call that cannot be executed; `feedback` goes back to the model."""

    def __init__(self, feedback: str) -> None:
        super().__init__(feedback)
        self.feedback = feedback


@dataclass(frozen=True)
class Seen:
    """The image a tool call refers to: the one the model saw last."""

    call_index: int  # the provider call that asked for the tool
    image: str  # "the overview" or "crop N"
    box: Box  # that image's level-0 region


@dataclass(frozen=True)
class ToolContext:
    """What a tool call may read of its episode, and nothing more: the slide, the colour of its
    outside and transparent pixels (`agent.fill`), where it may keep an image for the pages (`keep`
    writes it beside the trajectory and returns its file name; None where nothing is written), and
    which item and run it serves. A tool
    never sees the episode's state, so tools/ sits below agent/ in the layers, type-only imports counted."""

    slide: Slide
    fill: Fill
    keep: Callable[[EncodedImage], str] | None = None
    item_key: str = ""  # the episode's item and run (a tool that calls a model keys its ledger by them)
    run_index: int = 0


S = TypeVar("S", bound=BaseModel)
A = TypeVar("A", bound=ActionModel)
R = TypeVar("R", bound=ToolRecord)


class Tool(Generic[S, A, R]):
    """One tool the navigating agent may consult. Subclasses set the class attributes and methods.

    A tool is a package giant/tools/<name>/ whose `__init__` imports the module registering it, and a
    conf/tools/<name>.yaml holding its settings' values (composed at `tools.<name>` with no header);
    nothing else names it (docs/ARCHITECTURE.md, "Adding a tool").

    A call sees its episode through a `ToolContext` (the slide and the fill) and the image it is asked
    about (`Seen`), never the episode's state: tools/ imports nothing of agent/. The tool packages are
    imported on the registry's first read (giant.registry); never import, at a tool module's top,
    what is built from the registry (giant.tools.settings, giant.config): one ImportError says so.
    """

    name: ClassVar[str]
    settings: ClassVar[type[BaseModel]]  # tools.<name>.*, each field with its role (giant.roles)
    action: ClassVar[type[ActionModel]]  # `type: Literal[name]` plus the arguments the model sends
    record: ClassVar[type[ToolRecord]]  # `tool` is the name; the fields the call's result adds
    description: ClassVar[str]  # the function tool's description (tools mode)
    hints: ClassVar[dict[str, str]]  # each action field's description in the step schema
    report_title: ClassVar[str]  # the run report's section on the tool's calls
    report_note: ClassVar[str]  # what that section's table shows

    @classmethod
    def load(cls, settings: S) -> Self:
        """The tool ready for a run (its model read); a ConfigError line says why it cannot be."""
        raise NotImplementedError

    def prompt(self) -> str:
        """The system prompt's paragraph on the tool, appended when a run enables it."""
        raise NotImplementedError

    async def run(self, ctx: ToolContext, seen: Seen, action: A) -> R:
        """Execute one call on the latest image (`seen`) of `ctx.slide`; UnusableCall carries the
        model's feedback."""
        raise NotImplementedError

    def reply(self, record: R) -> str:
        """What the model is told of an executed call."""
        raise NotImplementedError

    @classmethod
    def show(cls, action: A) -> list[str]:
        """The action's arguments as the pages list them."""
        raise NotImplementedError

    @classmethod
    def describe(cls, record: R) -> dict[str, Any]:
        """A call's result as plain data for the pages: `summary` (a line), `model` (what ran),
        `image` (the image it ran on), `target` (that image's region), `rows` (pairs of strings,
        a small table in order) and, optionally, `overlay` (the name `ToolContext.keep` gave an image
        the call kept, shown under the table)."""
        raise NotImplementedError
