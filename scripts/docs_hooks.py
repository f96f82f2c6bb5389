"""MkDocs hooks of the documentation site (mkdocs.yml `hooks:`; MkDocs >= 1.6).

`on_files` adds the page reference/configuration.md, written from the settings models and conf/ by
scripts/config_reference.py on every build (`make docs`, `mkdocs serve`). The page is never a file in docs/,
so it cannot drift from the code: a key added to a model and its YAML is on the next build's page.
"""

from __future__ import annotations

import logging

# MkDocs puts this folder on sys.path while it imports a hook, so the sibling module imports here.
from config_reference import render
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

REFERENCE = "reference/configuration.md"  # the nav entry in mkdocs.yml

log = logging.getLogger("mkdocs.hooks.giant")  # under "mkdocs": a warning fails `mkdocs build --strict`


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """The generated configuration reference joins the site's files (a copy in docs/ is replaced, and
    warned about, so a stale page is never published)."""
    stale = files.get_file_from_path(REFERENCE)
    if stale is not None:
        log.warning("docs/%s is generated from the code on every build: delete the file", REFERENCE)
        files.remove(stale)
    files.append(File.generated(config, REFERENCE, content=render()))
    return files
