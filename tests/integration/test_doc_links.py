"""Every relative link in the documentation (README.md and docs/*.md) leads somewhere: to a file of the
repository and, when it names a heading (`page.md#anchor`), to a heading of that page as GitHub renders
its anchor. Pages move as the documentation grows; a link left behind fails here."""
from __future__ import annotations

import re
from pathlib import PurePosixPath

import pytest

from tests.doc_text import PROJECT_ROOT, page, pages

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCED = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)


def relative_links(name: str) -> list[str]:
    """The link targets of a page outside its code blocks, leaving out web addresses."""
    return [target for target in LINK.findall(FENCED.sub("", page(name)))
            if not re.match(r"[a-z]+:", target)]


def anchors(name: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lowercased, punctuation dropped, spaces as hyphens,
    a repeated heading numbered from -1."""
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#+ (.*)$", FENCED.sub("", page(name)), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        seen[slug] = seen.get(slug, -1) + 1
        if seen[slug]:
            seen[f"{slug}-{seen[slug]}"] = 0
    return set(seen)


@pytest.mark.parametrize("name", pages())
def test_every_relative_link_of_a_page_names_a_file_and_heading_that_exist(name: str) -> None:
    broken = []
    for target in relative_links(name):
        path, _, anchor = target.partition("#")
        linked = str(PurePosixPath(name).parent / path) if path else name
        if not (PROJECT_ROOT / linked).exists():
            broken.append(f"{target}: no file {linked}")
        elif anchor and linked.endswith(".md") and anchor not in anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked}")
    assert broken == []


def test_the_readme_links_every_page_of_docs() -> None:
    linked = {str(PurePosixPath(target.partition("#")[0])) for target in relative_links("README.md")}
    assert {name for name in pages() if name != "README.md"} <= linked
