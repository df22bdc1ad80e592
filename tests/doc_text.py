"""The project's documentation as the tests read it: a page of README.md or docs/, a section of it by its
heading, and the code blocks in it. Tests run the commands and snippets the documents show, so a page that
moves or a section that is renamed fails here, by name, rather than running nothing."""
from __future__ import annotations

import re
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
# Where the SQL questions over the demo's history are asked and answered.
HISTORY_QUESTIONS = ("docs/analysts.md", "## Questions over history")


def pages() -> list[str]:
    """Every page of documentation: README.md and docs/*.md, as names `page` takes."""
    return ["README.md", *sorted(f"docs/{path.name}" for path in (PROJECT_ROOT / "docs").glob("*.md"))]


def page(name: str) -> str:
    """`README.md`, or a page under docs/ (`docs/analysts.md`)."""
    return (PROJECT_ROOT / name).read_text(encoding="utf-8")


def section(name: str, heading: str) -> str:
    """The text under the one heading line starting with `heading` (`## Questions over history`), up to
    the next heading of the same level or above."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = page(name).split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith(heading)]
    assert len(starts) == 1, f"{name} has {len(starts)} sections {heading!r}, not one"
    body, fenced = lines[starts[0] + 1:], False
    for end, line in enumerate(body):
        fenced ^= line.startswith("```")
        if not fenced and re.match(rf"#{{1,{level}}} ", line):
            return "\n".join(body[:end])
    return "\n".join(body)


def code_blocks(text: str, language: str) -> list[str]:
    """The fenced blocks of `language` in text, each without its fences."""
    return re.findall(rf"```{language}\n(.*?)```", text, re.DOTALL)


def history_questions() -> list[str]:
    """The SQL of every question over the demo's history, in the order the page asks them."""
    return code_blocks(section(*HISTORY_QUESTIONS), "sql")
