"""MkDocs hooks of the documentation site (mkdocs.yml `hooks:`; MkDocs >= 1.6).

`on_files` puts the page reference/configuration.md, written from the settings models and conf/ by
scripts/config_reference.py, in the place of the placeholder docs/ holds there (which only tells a
reader of the repository how to see the page) on every build (`make docs`, `mkdocs serve`), so the
page cannot drift from the code: a key added to a model and its YAML is on the next build's page.
"""

from __future__ import annotations

import logging

# MkDocs puts this folder on sys.path while it imports a hook, so the sibling module imports here.
from config_reference import render
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

REFERENCE = "reference/configuration.md"  # the nav entry in mkdocs.yml
PLACEHOLDER = "<!-- A placeholder: every build of the documentation site replaces this file"  # its start

log = logging.getLogger("mkdocs.hooks.giant")  # under "mkdocs": a warning fails `mkdocs build --strict`


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """The generated configuration reference joins the site's files in the placeholder's place; any
    other file there is replaced too, and warned about, so a stale copy is never published."""
    committed = files.get_file_from_path(REFERENCE)
    if committed is not None:
        if not committed.content_string.startswith(PLACEHOLDER):
            log.warning("docs/%s is generated from the code on every build: keep the placeholder", REFERENCE)
        files.remove(committed)
    files.append(File.generated(config, REFERENCE, content=render()))
    return files
