"""The documentation site built strictly (`mkdocs build --strict`, as `make docs` does) and opened in
headless Chromium: the front page loads without script errors and reaches every guide from its
navigation, and the configuration reference generated from the code shows the settings."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.browser import open_page, serve

ROOT = Path(__file__).resolve().parents[2]


def nav_pages(nav: list[Any]) -> list[str]:
    pages: list[str] = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages.extend(nav_pages(value) if isinstance(value, list) else [value])
    return pages


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # Material's end-of-life banner on every build
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def config() -> dict[str, Any]:
    # mkdocs.yml has no Python tags, so the safe loader reads it
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())


def test_every_page_in_the_nav_exists_and_every_page_is_in_the_nav() -> None:
    listed = set(nav_pages(config()["nav"]))
    docs = ROOT / "docs"
    written = {p.relative_to(docs).as_posix() for p in docs.rglob("*.md")}
    generated = {"reference/configuration.md"}
    assert listed - written - generated == set()
    assert written - listed == set()


def test_the_readme_and_the_front_page_link_every_guide() -> None:
    """Every page of the nav's Guides section is reachable from the README's table and from
    docs/index.md's, not only from the site's menu (issue 42: gemini.md and input-design.md were not)."""
    guides = next(
        entry["Guides"] for entry in config()["nav"] if isinstance(entry, dict) and "Guides" in entry
    )
    pages = list(nav_pages(guides))
    readme = (ROOT / "README.md").read_text()
    index = (ROOT / "docs" / "index.md").read_text()
    assert [page for page in pages if f"(docs/{page})" not in readme] == []
    assert [page for page in pages if f"({page})" not in index] == []


def test_the_sweeps_guide_lists_every_option_of_every_group() -> None:
    """docs/sweeps.md's table of the config groups names each conf/<group>/<option>.yaml (issue 42: it
    lacked gemini and patch_design)."""
    from giant.confdir import group_options

    rows = {
        match[0]: match[1]
        for match in re.findall(r"^\| `(\w+)` \| ([^|]+) \|", (ROOT / "docs" / "sweeps.md").read_text(), re.M)
    }
    missing = {
        group: [option for option in group_options(group) if f"`{option}`" not in rows.get(group, "")]
        for group in ("provider", "dataset", "agent", "experiment", "launcher", "tracking", "tools", "server")
    }
    assert {group: options for group, options in missing.items() if options} == {}


def test_readme_links_reach_existing_pages() -> None:
    """The README is the front page: each of its relative links must land on a file."""
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\((?!https?://|#)([^)#\s]+)", readme)
    assert targets, "the README links into the site"
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert missing == []


@pytest.mark.slow
def test_front_page_reaches_every_guide_and_the_reference(browser: Any, site: Path) -> None:
    pages = nav_pages(config()["nav"])
    with serve(site) as base, open_page(browser, f"{base}/index.html") as opened:
        page = opened.page
        assert "giant" in page.title()
        hrefs = set(page.eval_on_selector_all("nav a[href]", "links => links.map(a => a.href)"))
        for source in pages:
            built = source.removesuffix(".md") + ".html"
            assert f"{base}/{built}" in hrefs, f"{built} is not in the front page's navigation"
        assert opened.errors == []

        page.click("nav a[href$='reference/configuration.html']")
        page.wait_for_load_state("load")
        assert page.url == f"{base}/reference/configuration.html"
        text = page.inner_text("article")
        for key in ("agent.max_steps", "agent.crop_size", "provider.model", "dataset.wsi_root"):
            assert key in text, f"{key} is missing from the configuration reference"
        assert opened.errors == []
