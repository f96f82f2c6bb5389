"""The agent's prompt wording as Jinja2 template files: the shipped ones, or your own (`agent.prompts`).

The shipped templates (giant/agent/prompts/*.j2) are the wording the project has always sent,
byte for byte (tests/agent/test_wording.py holds the texts the code sent before the templates), so the
ledger keys and config hashes of earlier runs do not move. `agent.prompts=FOLDER` replaces any of them
by the file of the same name in FOLDER; the digest of those files is part of the method (the config
hash), so two wordings are two methods. A template that leaves out a field the agent relies on (the
slide size, the step budget, the answer format) is refused with one line: the model could not follow
the loop without it.

Rendering: blank lines separate paragraphs, runs of blank lines count as one, and the text is
stripped, so a paragraph left empty by an `{% if %}` leaves no gap.

A wording folder is something people share, so a template is data, not code: it is rendered in
Jinja2's sandbox (no Python internals: `{{ cycler.__init__.__globals__ }}` is refused), alone (no
loader: `{% include %}`, `{% import %}` and `{% extends %}` are refused), with only the fields the
agent gives (an undefined name is refused, in every branch), within MAX_RENDER_S and MAX_RENDER_CHARS.
`check_folder` renders every template against sample fields once when the settings are read, so a
template that would fail does so in one line, exit 2, before any call (in the dry run too).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta
from jinja2 import nodes
from jinja2.sandbox import SandboxedEnvironment

SHIPPED_DIR = Path(__file__).with_name("prompts")
SUFFIX = ".j2"
# Each template and the fields it must use (a wording without them breaks the loop).
REQUIRED: dict[str, dict[str, tuple[str, ...]]] = {
    "system": {
        "the slide size": ("width", "height"),
        "the step budget": ("max_steps",),
        "the answer format": ("answer_format",),
    },
    "random_regions_system": {
        "the slide size": ("width", "height"),
        "the number of regions": ("n_regions",),
        "the answer format": ("answer_format",),
    },
    "answer_format": {},
    "steps_left": {"the steps left": ("left",)},
}
# Every field the agent gives each template (giant.agent.instructions): any other name is a mistake.
FIELDS: dict[str, tuple[str, ...]] = {
    "system": (
        "width",
        "height",
        "max_steps",
        "crop_size",
        "pacing",
        "context",
        "note_tool",
        "mode",
        "answer_format",
    ),
    "random_regions_system": ("width", "height", "n_regions", "context", "answer_format"),
    "answer_format": (),
    "steps_left": ("left",),
}
# A system prompt is about 1,500 characters and renders in well under a millisecond: these bounds only
# stop a template that loops or multiplies its way to a hang or a huge request.
MAX_RENDER_S = 1.0
MAX_RENDER_CHARS = 100_000
_REFUSED_TAGS = {
    nodes.Include: "include",
    nodes.Import: "import",
    nodes.FromImport: "from",
    nodes.Extends: "extends",
}
_GAPS = re.compile(r"\n[ \t]*(?:\n[ \t]*)+\n")


class TemplateRefused(ValueError):
    """A template that broke a rendering bound (time, size, a sandbox rule); the message says which."""


class _Sandbox(SandboxedEnvironment):
    """Jinja2's sandbox with bounds: every call, attribute and `*`/`**` checks the render's deadline,
    and `*`/`**` may not build a value larger than the output allows."""

    intercepted_binops = frozenset({"*", "**"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._local = threading.local()

    def begin(self) -> None:
        self._local.deadline = time.monotonic() + MAX_RENDER_S

    def tick(self) -> None:
        deadline = getattr(self._local, "deadline", None)
        if deadline is not None and time.monotonic() > deadline:
            raise TemplateRefused(f"rendering took over {MAX_RENDER_S:g} s")

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        __self.tick()
        return super().call(__context, __obj, *args, **kwargs)

    def getattr(self, obj: Any, attribute: str) -> Any:
        self.tick()
        return super().getattr(obj, attribute)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        self.tick()
        if operator == "**" and isinstance(right, (int, float)) and abs(right) > 64:
            raise TemplateRefused(f"{left!r} ** {right!r} is too large an exponent")
        if operator == "*":
            sizes = [len(x) for x in (left, right) if isinstance(x, (str, list, tuple))]
            counts = [x for x in (left, right) if isinstance(x, int)]
            if sizes and counts and sizes[0] * counts[0] > MAX_RENDER_CHARS:
                raise TemplateRefused(
                    f"a repeat of {sizes[0] * counts[0]:,} items is over {MAX_RENDER_CHARS:,}"
                )
        return super().call_binop(context, operator, left, right)


class Wording:
    """One set of templates: the shipped ones with a folder's files in their place."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        sources = {name: (SHIPPED_DIR / f"{name}{SUFFIX}").read_text(encoding="utf-8") for name in REQUIRED}
        self.own = _own_templates(folder) if folder is not None else {}
        sources.update(self.own)
        self._env = _Sandbox(
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=False,
            autoescape=False,
        )  # no loader: a template is rendered alone
        self._templates = {name: _compiled(self._env, name, text, folder) for name, text in sources.items()}

    @property
    def digest(self) -> str | None:
        """sha256 of the files that replace shipped ones; None for the shipped wording."""
        if not self.own:
            return None
        text = "\0".join(f"{name}\0{self.own[name]}" for name in sorted(self.own))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def render(self, name: str, **fields: Any) -> str:
        """The template filled in, within MAX_RENDER_S and MAX_RENDER_CHARS (TemplateRefused past them)."""
        self._env.begin()
        parts: list[str] = []
        size = 0
        for part in self._templates[name].generate(**fields):
            size += len(part)
            if size > MAX_RENDER_CHARS:
                raise TemplateRefused(f"it writes over {MAX_RENDER_CHARS:,} characters")
            self._env.tick()
            parts.append(part)
        return _GAPS.sub("\n\n", "".join(parts)).strip()

    def check(self) -> None:
        """Render every template of a folder once per sample: a template that cannot be rendered is
        refused now, in one line naming its file, instead of failing an item-run after calls were paid."""
        for name in self.own:
            for fields in _samples(name, self):
                try:
                    self.render(name, **fields)
                except Exception as exc:  # any failure of a user's template is its problem
                    known = isinstance(exc, TemplateRefused | jinja2.TemplateError)
                    what = str(exc).rstrip(".") if known else repr(exc)
                    fix = (
                        "keep it short and without long loops"
                        if isinstance(exc, TemplateRefused)
                        else f"a template may use only its fields ({_field_list(name)}) and Jinja2's "
                        "plain tags and filters"
                    )
                    where = self.folder / f"{name}{SUFFIX}" if self.folder else name
                    raise ValueError(f"{where} cannot be rendered ({what}); {fix}") from None

    def answer_format(self) -> str:
        return self.render("answer_format")

    def steps_left(self, left: int) -> str:
        return self.render("steps_left", left=left)


def wording(folder: Path | None) -> Wording:
    """The wording of `agent.prompts` (None: shipped), read once per folder."""
    return _cached(None if folder is None else Path(folder).absolute())


@functools.cache
def _cached(folder: Path | None) -> Wording:
    return Wording(folder)


def prompts_digest(folder: Path) -> str | None:
    """The digest of `agent.prompts`' templates (part of the config hash)."""
    return wording(folder).digest


def check_folder(folder: Path) -> Path:
    """A folder of templates usable as `agent.prompts` (each rendered once against sample fields);
    ValueError (one line) otherwise."""
    Wording(folder).check()
    return folder


def _samples(name: str, words: Wording) -> Iterator[dict[str, Any]]:
    """Fields as the agent gives them, in each branch the shipped templates have (T of 1 and more, the
    note tool on and off, a context line or none)."""
    answer = words.render("answer_format") if name != "answer_format" else ""
    context = ("", "To save context, only the overview image stays visible.")
    if name == "system":
        for steps, note, ctx in itertools.product((1, 20), (False, True), context):
            yield {
                "mode": "giant",
                "width": 6000,
                "height": 4000,
                "max_steps": steps,
                "crop_size": 1000,
                "pacing": "Use your steps to examine the tissue.",
                "context": ctx,
                "note_tool": note,
                "answer_format": answer,
            }
    elif name == "random_regions_system":
        for ctx in context:
            yield {"width": 6000, "height": 4000, "n_regions": 5, "context": ctx, "answer_format": answer}
    elif name == "steps_left":
        for left in (0, 1, 7):
            yield {"left": left}
    else:
        yield {}


def _field_list(name: str) -> str:
    return ", ".join(FIELDS[name]) or "none"


def _own_templates(folder: Path) -> dict[str, str]:
    if not folder.is_dir():
        raise ValueError(f"no such folder; put your {SUFFIX} templates in a folder (shipped: {SHIPPED_DIR})")
    files = sorted(folder.glob(f"*{SUFFIX}"))
    unknown = [path.name for path in files if path.stem not in REQUIRED]
    if unknown:
        known = ", ".join(f"{name}{SUFFIX}" for name in REQUIRED)
        raise ValueError(f"{', '.join(unknown)}: not a template the agent sends; name them {known}")
    if not files:
        raise ValueError(f"holds no {SUFFIX} template; copy one from {SHIPPED_DIR} and edit it")
    return {path.stem: path.read_text(encoding="utf-8") for path in files}


def _compiled(env: jinja2.Environment, name: str, text: str, folder: Path | None) -> jinja2.Template:
    where = f"{name}{SUFFIX}" if folder is None else str(folder / f"{name}{SUFFIX}")
    try:
        parsed = env.parse(text)
    except jinja2.TemplateSyntaxError as exc:
        raise ValueError(f"{where} line {exc.lineno}: {exc.message}; fix the template") from None
    for node in parsed.find_all(tuple(_REFUSED_TAGS)):
        tag = _REFUSED_TAGS[type(node)]
        raise ValueError(
            f"{where} line {node.lineno}: {{% {tag} %}} is not allowed (a template is rendered alone); "
            "write the text into the template itself"
        )
    used = jinja2.meta.find_undeclared_variables(parsed)
    unknown = sorted(used - set(FIELDS[name]))
    if unknown:
        line = min(n.lineno for n in parsed.find_all(nodes.Name) if n.name in unknown)
        shown = ", ".join("{{ " + field + " }}" for field in unknown)
        raise ValueError(
            f"{where} line {line}: {shown} is not a field of this template; use only {_field_list(name)}"
        )
    for what, fields in REQUIRED[name].items():
        missing = [field for field in fields if field not in used]
        if missing:
            shown = ", ".join("{{ " + field + " }}" for field in missing)
            raise ValueError(f"{where} leaves out {what}: add {shown}")
    return env.from_string(text)
