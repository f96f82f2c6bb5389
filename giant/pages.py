"""The HTML pages giant writes (run report, trajectory page, comparison page), rendered from the Jinja2
templates in giant/templates with autoescape on: every value a template prints is escaped unless it is
`markupsafe.Markup`, so text from a model, a dataset or a CSV can never become markup. Mark only markup
giant wrote itself (its own scripts) as Markup, never anything read from outside."""

from __future__ import annotations

from typing import Any, NamedTuple

import jinja2

# One environment for the process: templates are compiled once and cached by it. StrictUndefined
# turns a misspelt name in a template into an error instead of an empty cell.
_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("giant", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


class Link(NamedTuple):
    """A cell that links to a page inside the output folder; no `href` shows the text alone."""

    text: str
    href: str | None = None


def render(template_name: str, /, **context: Any) -> str:
    """The page `template_name` filled from `context` (plain data: the markup is the template's)."""
    return _ENV.get_template(template_name).render(**context)
