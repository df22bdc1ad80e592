"""Every output escapes what it prints from the history (issue 17): events recorded with bidi controls,
terminal escapes, markup and HTML in their text, written around today's grammar as an older toolcat
let them be, are read through `tool show`, `effective`, `sql`, `audit alias` and the audit report (HTML and
JSON). Each shows the characters as escapes, never as what they would do; JSON still decodes to exactly
what was recorded."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from domain.base import Meta
from domain.name import NameClaim
from domain.tool import Tool
from domain.values import ToolSpec
from infra.settings import Settings
from infra.wiring import open_catalog
from tests.support import Run, run_in_process, toolcat_environ, toolcat_in_process

RLO, PDF, ESC = "\u202e", "\u202c", "\x1b"
# What an attacker would record: a reordering override, a terminal colour escape, Rich markup, HTML, a line.
HOSTILE = f"ok {RLO}lave{PDF} [red]BETA[/red] {ESC}[31mred{ESC}[0m <script>x()</script> line\nbreak"
HOSTILE_ACTOR = f"mallory{RLO}"
STORY = [
    ["init", "--policy", "tyrum"],
    ["release", "publish", "1.0.0"],
    ["tool", "register", "memory.seed", "--source", "builtin_mcp", "--group", "memory", "--tier", "default",
     "--visibility", "public"],
    ["alias", "add", "memory.seed", "mcp.memory.seed"],
    ["alias", "deprecate", "mcp.memory.seed"],
    ["unit", "create", "eng"],
    ["agent", "create", "triage", "--unit", "eng"],
]


@pytest.fixture(scope="module")
def hostile_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Given a catalog whose tool `acme.evil` (description HOSTILE, granted to agent triage) and whose removal
    step 1 of `mcp.memory.seed` (evidence HOSTILE, actor HOSTILE_ACTOR) were recorded around the grammar."""
    home = tmp_path_factory.mktemp("hostile") / "home"
    run_in_process(home, STORY)
    # model_construct skips Meta's checks, and the aggregates are changed directly: as an older toolcat wrote.
    meta = Meta.model_construct(actor=HOSTILE_ACTOR, reason=HOSTILE, idempotency_key=None)
    catalog = open_catalog(Settings(home=home))
    try:
        spec = ToolSpec(source="plugin", plugin="acme", group="extension", tier="advanced", visibility="public",
                        description=HOSTILE)
        tool = Tool.register("acme.evil", spec.with_family("acme.evil"), "1.0.0", meta)
        catalog.save(tool, NameClaim.claim("acme.evil", tool.id, meta))
        catalog.add_grant("agent:triage", "acme.evil", meta)
        seed = catalog.alias_owner("mcp.memory.seed")
        seed.record_step("mcp.memory.seed", 1, HOSTILE, meta)
        catalog.save(seed)
    finally:
        catalog.close()
    return home


@pytest.fixture
def cli(hostile_home: Path) -> Iterator[Any]:
    def run(*args: str) -> Run:
        done = toolcat_in_process(hostile_home, *args)
        assert done.code == 0, done.stderr
        return done
    with toolcat_environ("reader"):
        yield run


def assert_nothing_hidden(text: str, escapes: tuple[str, ...] = ("\\u202e", "\\x1b")) -> None:
    """The text shows what was recorded as escapes: no override, no terminal escape, no markup applied."""
    assert RLO not in text and PDF not in text and ESC not in text
    assert all(escape in text for escape in escapes), escapes


def assert_json_escapes(text: str) -> None:
    assert_nothing_hidden(text, ("\\u202e", "\\u202c", "\\u001b"))


def assert_shown_literally(text: str) -> None:
    assert_nothing_hidden(text)
    assert "[red]BETA[/red]" in text  # data is never markup
    assert "line\\nbreak" in text  # a newline inside a value never starts a line of its own


def test_tool_show_escapes_the_description_and_json_keeps_it_exactly(cli: Any) -> None:
    assert_shown_literally(cli("tool", "show", "acme.evil").stdout)
    as_json = cli("tool", "show", "acme.evil", "--json").stdout
    assert_json_escapes(as_json)
    assert json.loads(as_json)["description"] == HOSTILE


def test_effective_escapes_the_table_and_json_keeps_it_exactly(cli: Any) -> None:
    table = cli("effective", "agent:triage").stdout
    assert_nothing_hidden(table)
    assert "[red]BETA[/red]" in table
    as_json = cli("effective", "agent:triage", "--json").stdout
    assert_json_escapes(as_json)
    [row] = [t for t in json.loads(as_json)["tools"] if t["tool_id"] == "acme.evil"]
    assert row["description"] == HOSTILE


def test_sql_escapes_tables_csv_and_json(cli: Any) -> None:
    query = "SELECT actor, reason FROM events WHERE type = 'Tool.StepRecorded'"
    table = cli("sql", query).stdout
    assert_nothing_hidden(table)
    assert "[red]BETA[/red]" in table
    csv_text = cli("sql", query, "--format", "csv").stdout
    assert_nothing_hidden(csv_text)
    as_json = cli("sql", query, "--format", "json").stdout
    assert_json_escapes(as_json)
    assert json.loads(as_json) == [{"actor": HOSTILE_ACTOR, "reason": HOSTILE}]


def test_audit_alias_escapes_the_steps_and_json_keeps_them_exactly(cli: Any) -> None:
    text = cli("audit", "alias", "mcp.memory.seed").stdout
    assert_nothing_hidden(text)
    assert "[red]BETA[/red]" in text and "mallory\\u202e" in text
    as_json = cli("audit", "alias", "mcp.memory.seed", "--json").stdout
    assert_json_escapes(as_json)
    [step] = json.loads(as_json)["steps"]
    assert (step["evidence"], step["actor"]) == (HOSTILE, HOSTILE_ACTOR)


def test_the_html_report_escapes_and_marks_each_hidden_character(cli: Any, tmp_path: Path) -> None:
    cli("audit", "report", "--format", "html", "-o", str(tmp_path / "report.html"))
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert RLO not in page and PDF not in page and ESC not in page
    assert "<script>x()</script>" not in page and "&lt;script&gt;x()&lt;/script&gt;" in page
    assert ('<span class="hidden-char" title="U+202E RIGHT-TO-LEFT OVERRIDE">\\u202e</span>' in page)
    assert '<span class="hidden-char" title="U+001B control">\\x1b</span>' in page
    assert "[red]BETA[/red]" in page


def test_the_json_report_escapes_and_decodes_to_what_was_recorded(cli: Any, tmp_path: Path) -> None:
    cli("audit", "report", "--format", "json", "-o", str(tmp_path / "report.json"))
    text = (tmp_path / "report.json").read_text(encoding="utf-8")
    assert_json_escapes(text)
    [entry] = json.loads(text)["aliases"]
    [step] = [s for s in entry["steps"] if s["step"] == 1]
    assert (step["evidence"], step["actor"]) == (HOSTILE, HOSTILE_ACTOR)


def test_an_error_repeating_a_hostile_value_escapes_it(hostile_home: Path) -> None:
    with toolcat_environ("reader"):
        text = toolcat_in_process(hostile_home, "resolve", f"acme.{RLO}evil{ESC}[2J")
        as_json = toolcat_in_process(hostile_home, "resolve", f"acme.{RLO}evil", "--json")
    assert text.code == as_json.code == 3
    assert RLO not in text.stderr and ESC not in text.stderr and "\\u202e" in text.stderr
    # no ID holds a bidi control: malformed, not merely unknown (issue 13, rule 13)
    assert RLO not in as_json.stderr and json.loads(as_json.stderr)["error"]["code"] == "invalid_id"


def test_the_web_page_shows_hidden_characters_as_escapes_and_keeps_its_own_markup() -> None:
    from markupsafe import Markup

    from infra.http.web import _TEMPLATES
    page = _TEMPLATES.from_string("<p>{{ text }}</p>{{ drawn }}").render(text=HOSTILE, drawn=Markup("<svg/>"))
    assert_nothing_hidden(page)
    assert "&lt;script&gt;" in page and "[red]BETA[/red]" in page and page.endswith("<svg/>")
