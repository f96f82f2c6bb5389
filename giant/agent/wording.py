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
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta

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
_GAPS = re.compile(r"\n[ \t]*(?:\n[ \t]*)+\n")


class Wording:
    """One set of templates: the shipped ones with a folder's files in their place."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        sources = {name: (SHIPPED_DIR / f"{name}{SUFFIX}").read_text(encoding="utf-8") for name in REQUIRED}
        self.own = _own_templates(folder) if folder is not None else {}
        sources.update(self.own)
        env = jinja2.Environment(
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=False,
            autoescape=False,
        )
        self._templates = {name: _compiled(env, name, text, folder) for name, text in sources.items()}

    @property
    def digest(self) -> str | None:
        """sha256 of the files that replace shipped ones; None for the shipped wording."""
        if not self.own:
            return None
        text = "\0".join(f"{name}\0{self.own[name]}" for name in sorted(self.own))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def render(self, name: str, **fields: Any) -> str:
        text = self._templates[name].render(**fields)
        return _GAPS.sub("\n\n", text).strip()

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
    """A folder of templates usable as `agent.prompts`; ValueError (one line) otherwise."""
    Wording(folder)
    return folder


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
        used = jinja2.meta.find_undeclared_variables(env.parse(text))
    except jinja2.TemplateSyntaxError as exc:
        raise ValueError(f"{where} line {exc.lineno}: {exc.message}; fix the template") from None
    for what, fields in REQUIRED[name].items():
        missing = [field for field in fields if field not in used]
        if missing:
            shown = ", ".join("{{ " + field + " }}" for field in missing)
            raise ValueError(f"{where} leaves out {what}: add {shown}")
    return env.from_string(text)
