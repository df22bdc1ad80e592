"""End to end (issue 32): the console's search and tool pages, on `toolcat serve` with tokens, over the Tyrum
story recorded at its example dates (January to November 2026) and a few tools after it.

The browser story (headless Chromium driven by selenium): an operator signs in, finds a tool by a word of
its description, opens it, sees who could call it on a past date, follows a link to a subject and sees why.
The HTTP tests read the pages as a person would (names, dates, verdicts), and check what the pages refuse.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.browser import Node, click_and_leave, driven_chromium, parse_dom
from tests.serving import Served, serving, tokens
from tests.support import run_example, run_in_process

HOSTILE = '<script>document.title="pwned"</script><img src=x onerror="document.title=\'pwned\'">&amp; "quoted"'
PLUGIN = ["--source", "plugin", "--plugin", "acme", "--group", "extension", "--tier", "advanced",
          "--visibility", "public"]
NOTES_V1 = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
NOTES_V2 = {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query"]}
PAST = "2026-06-01"  # agent:triage was granted websearch on 2026-04-01, and lost it on 2026-10-12


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, str]]:
    """The story's server, with a `reader` token (read scope); answers (server, the reader's token)."""
    root = tmp_path_factory.mktemp("console-tools")
    home = root / "home"
    run_example(home)
    (root / "v1.json").write_text(json.dumps(NOTES_V1))
    (root / "v2.json").write_text(json.dumps(NOTES_V2))
    run_in_process(home, [
        ["tool", "register", "acme.notes.search", *PLUGIN, "--schema", str(root / "v1.json"),
         "--description", "Find notes by keyword in the team wiki"],
        ["tool", "update", "acme.notes.search", "--schema", str(root / "v2.json")],
        ["alias", "add", "acme.notes.search", "acme.notes.find"],
        *[["tool", "register", f"acme.n.v{n}", *PLUGIN] for n in (10, 2, 1)],
        ["tool", "register", "acme.notes.render", *PLUGIN, "--description", HOSTILE],
        ["project"]])
    keys = tokens(home, reader="read")
    with serving(home) as server:
        yield server, keys["reader"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with driven_chromium() as driver:
        yield driver


def page(served: tuple[Served, str], path: str, status: int = 200) -> Node:
    """The page at `path` as the reader's browser gets it (its token in the Authorization header)."""
    server, token = served
    with server.client(token, headers={"Accept": "text/html"}) as client:
        answer = client.get(path)
    assert answer.status_code == status, answer.text[-2000:]
    assert "<script" not in answer.text  # nothing runs: no script of the pages, none from the history
    return parse_dom(answer.text)


def results(dom: Node) -> list[tuple[str, str]]:
    return [(row.attrs["data-kind"], row.attrs["data-id"]) for row in dom.all("tr", class_="result")]


def error_of(dom: Node) -> tuple[str, str]:
    found = dom.one("p", id="error")
    return found.attrs["data-code"], found.text()


# -- the browser story ------------------------------------------------------------------------------------
def test_an_operator_finds_a_tool_sees_who_could_call_it_on_a_past_date_and_why(
        served: tuple[Served, str], browser: Any) -> None:
    server, token = served
    driver = browser
    # Given tokens are on: the browser is sent to sign in, and signs in with the reader's token
    driver.delete_all_cookies()
    driver.get(server.url + "/")
    assert driver.title == "Sign in · toolcat"
    driver.find_element("id", "token").send_keys(token)
    click_and_leave(driver, driver.find_element("css selector", "#signin button"))
    assert driver.find_element("tag name", "h1").text == "Tool catalog"

    # When the operator searches for a word of a description, then the tool is among the matches
    driver.find_element("css selector", "#search-box input[name=q]").send_keys("web")
    click_and_leave(driver, driver.find_element("css selector", "#search-box button"))
    found = [row.text for row in driver.find_elements("css selector", "#results tr.result")]
    assert any("websearch" in row and "Search the web" in row for row in found), found

    # When they open it, then they see its descriptor and the route rule that denies it
    click_and_leave(driver, driver.find_element("link text", "websearch"))
    assert driver.find_element("id", "tool-id").text.startswith("websearch")
    assert driver.find_element("id", "description").text == "Search the web"
    assert "no-network-sink-after-sensitive-source" in driver.find_element("id", "rules").text

    # When they ask who could call it at the end of a past date
    field = driver.find_element("id", "as_of")
    driver.execute_script("arguments[0].value = arguments[1]", field, PAST)  # what the date picker fills in
    click_and_leave(driver, driver.find_element("css selector", "#moment button"))
    # then they see the moment asked for, and agent:triage among those that could call it, enabled
    summary = driver.find_element("id", "who-summary").text
    assert driver.find_element("id", "moment-time").text.startswith("2026-")
    assert driver.find_element("id", "moment-time").text[:10] <= PAST and summary.startswith("As known at position")
    holders = {row.get_attribute("data-subject"): row.text for row in
               driver.find_elements("css selector", "#who tr.holder")}
    assert "agent:triage" in holders and "enabled" in holders["agent:triage"]

    # When they follow the subject's link, then its set as known then holds the tool
    holder = "#who tr.holder[data-subject='agent:triage'] a.subject"
    click_and_leave(driver, driver.find_element("css selector", holder))
    assert "agent:triage" in driver.find_element("tag name", "h1").text
    row = driver.find_element("css selector", "#effective tr.tool[data-tool='websearch']")
    assert "explicit" in row.text
    # and asking why, they are told: through its explicit grant
    click_and_leave(driver, row.find_element("css selector", "a.why"))
    assert driver.find_element("tag name", "h1").text == "Why agent:triage sees websearch"
    assert "grant websearch on agent:triage" in driver.find_element("id", "verdict").text


# -- search -----------------------------------------------------------------------------------------------
def test_search_finds_ids_by_prefix_in_natural_order(served: tuple[Served, str]) -> None:
    # When the operator searches an ID prefix, then the tools come in the order people count
    assert results(page(served, "/search?q=acme.n.")) == [
        ("tool", "acme.n.v1"), ("tool", "acme.n.v2"), ("tool", "acme.n.v10")]
    # and subjects are found by their names too, each linked to its page
    dom = page(served, "/search?q=tri")
    assert ("agent", "triage") in results(dom)
    assert dom.one("a", class_="subject").attrs["href"] == "/subjects/" + quote("agent:triage", safe="")


def test_search_finds_words_of_descriptions_and_aliases_lead_to_their_tool(served: tuple[Served, str]) -> None:
    dom = page(served, "/search?q=Wiki+NOTES")  # every word, in any case and order
    assert results(dom) == [("alias", "acme.notes.find"), ("tool", "acme.notes.search")]
    links = {a.text(): a.attrs["href"] for a in dom.all("a", class_="tool-link")}
    assert links == {"acme.notes.find": "/tools/acme.notes.find", "acme.notes.search": "/tools/acme.notes.search"}
    assert "alias of acme.notes.search" in dom.one("tr", data_id="acme.notes.find").text()


def test_search_filters_narrow_the_matches(served: tuple[Served, str]) -> None:
    assert results(page(served, "/search?source=builtin_mcp&server=exa")) == [
        ("tool", "codesearch"), ("alias", "tool.http.fetch"), ("tool", "webfetch"), ("tool", "websearch")]
    assert results(page(served, "/search?kind=agent")) == [("agent", "triage")]
    retired = results(page(served, "/search?lifecycle=retired"))
    assert ("alias", "mcp.memory.search") in retired and {kind for kind, _ in retired} == {"alias"}
    memory = page(served, "/search?group=memory&tier=default&kind=tool")
    assert [row.all("td")[4].text() for row in memory.all("tr", class_="result")] == ["memory"] * 3
    assert results(page(served, "/search?family=acme.n")) == [
        ("tool", "acme.n.v1"), ("tool", "acme.n.v2"), ("tool", "acme.n.v10")]
    assert results(page(served, "/search?family=acme.n&q=zzz-nothing")) == []


def test_search_pages_through_every_match_once(served: tuple[Served, str]) -> None:
    first = page(served, "/search")
    summary = first.one("p", id="summary").text()
    total = int(summary.split()[0])
    assert total > 50 and "page 1 of" in summary
    seen = results(first)
    following = first.one("a", rel="next").attrs["href"]
    while following:
        dom = page(served, following)
        seen += results(dom)
        nexts = dom.all("a", rel="next")
        following = nexts[0].attrs["href"] if nexts else ""
    assert len(seen) == total == len(set(seen))


@pytest.mark.parametrize(("query", "said"), [
    ("tier=gold", "tier 'gold' is not one of: default, advanced"),
    ("kind=robot", "kind 'robot' is not one of: tool, alias, unit, agent, connector"),
    ("family=acme.nn", "no family 'acme.nn' in the catalog; did you mean 'acme.n'?"),
    ("server=nope", "no server 'nope' in the catalog"),
    ("page=0", "page '0' is not a page number"),
    ("page=two", "page 'two' is not a page number"),
    ("page=99", "page 99 is past the last page"),
])
def test_a_search_that_can_match_nothing_is_a_clear_400_page(served: tuple[Served, str], query: str,
                                                            said: str) -> None:
    code, message = error_of(page(served, f"/search?{query}", 400))
    assert code == "usage" and message.startswith(said), message


# -- a tool's page ----------------------------------------------------------------------------------------
def test_a_tools_page_shows_its_schema_versions_with_their_verdicts(served: tuple[Served, str]) -> None:
    dom = page(served, "/tools/acme.notes.search")
    assert dom.one(id="description").text() == "Find notes by keyword in the team wiki"
    verdicts = {row.attrs["data-version"]: row.one("td", class_="verdict").text()
                for row in dom.all("tr", class_="schema-version")}
    assert verdicts == {"1": "first version", "2": "compatible under backward"}
    assert [row.attrs["data-alias"] for row in dom.all("tr", class_="alias")] == ["acme.notes.find"]
    # an alias opens its tool's page, saying so
    by_alias = page(served, "/tools/acme.notes.find")
    assert by_alias.one(id="tool-id").text().startswith("acme.notes.search")
    assert "acme.notes.find" in by_alias.one(id="asked-as").text()


def test_a_tools_page_shows_its_aliases_windows_and_its_history(served: tuple[Served, str]) -> None:
    dom = page(served, "/tools/memory.search")
    (alias,) = dom.all("tr", class_="alias")
    assert alias.attrs["data-alias"] == "mcp.memory.search"
    assert "retired" in alias.text() and "retired in 1.3.0" in alias.text()
    # Every event of the tool, with its date, actor and reason: here, its rename
    dom = page(served, "/tools/memory.seed")
    events = [[cell.text() for cell in row.all("td")] for row in dom.all("tr", class_="event")]
    renamed = [e for e in events if e[2] == "Tool.Renamed"]
    assert renamed and renamed[0][1].startswith("2026-02-02") and renamed[0][3] == "tester"
    assert renamed[0][4] == "ARCH-21: memory helpers move to the memory family"
    assert [e[2] for e in events][0] == "Tool.Registered"


def test_who_can_on_a_tools_page_is_the_who_can_answer(served: tuple[Served, str]) -> None:
    server, token = served
    for moment in ("", PAST, "2026-01-01", "2030-01-01"):  # (the last: after every event, as now)
        dom = page(served, "/tools/websearch" + (f"?as_of={moment}" if moment else ""))
        shown = {row.attrs["data-subject"]: [c.text() for c in row.all("td")][1:4]
                 for row in dom.all("tr", class_="holder")}
        with server.client(token) as client:
            answer = client.get("/v1/tools/websearch/who-can", params={"as_of": moment} if moment else {})
        assert answer.status_code == 200, answer.text
        expected = {s["subject"]: [s["provenance"], s["inherited_from"] or "", s["exposure"] or ""]
                    for s in answer.json()["subjects"]}
        assert shown == expected
        assert dom.one(id="who-count").text() == str(len(expected))
    # agent:triage lost the grant on 2026-10-12: it could call it on the past date, not now
    assert "agent:triage" in page(served, f"/tools/websearch?as_of={PAST}").one(id="who").text()
    assert "agent:triage" not in page(served, "/tools/websearch").one(id="who-can").text()


@pytest.mark.parametrize(("path", "status", "code"), [
    ("/tools/no.such.tool", 404, "unknown_tool"),
    ("/tools/websearch?as_of=yesterday", 400, "usage"),
    ("/tools/websearch?at=-3", 400, "usage"),
    ("/tools/websearch?history_page=9", 400, "usage"),
    ("/tools/websearch?who_page=x", 400, "usage"),
    ("/?page=nine", 400, "usage"),
])
def test_a_tool_page_for_what_is_not_there_says_so(served: tuple[Served, str], path: str, status: int,
                                                   code: str) -> None:
    assert error_of(page(served, path, status))[0] == code


# -- every tool name leads to its page; hostile text stays text --------------------------------------------
def test_tool_names_on_the_catalog_and_a_subjects_page_link_to_the_tool(served: tuple[Served, str]) -> None:
    catalog = page(served, "/")
    links = {a.text(): a.attrs["href"] for a in catalog.all("a", class_="tool-link")}
    assert links["websearch"] == "/tools/websearch" and len(links) > 50
    assert [t for t in links if t.startswith("acme.n.")] == ["acme.n.v1", "acme.n.v2", "acme.n.v10"]
    subject = page(served, "/subjects/" + quote("agent:triage", safe=""))
    assert {a.attrs["href"] for a in subject.all("a", class_="tool-link")} >= {"/tools/grep", "/tools/read"}
    # and so do the why of a tool and the deprecations
    why = page(served, "/subjects/" + quote("agent:triage", safe="") + "/tools/grep")
    assert why.one("a", class_="tool-link").attrs["href"] == "/tools/grep"
    deprecations = page(served, "/deprecations")
    assert "/tools/memory.search" in {a.attrs["href"] for a in deprecations.all("a", class_="tool-link")}


def test_hostile_text_from_the_history_is_shown_as_text(served: tuple[Served, str]) -> None:
    for path in ("/search?q=acme.notes.render", "/tools/acme.notes.render", "/search?q=" + quote(HOSTILE)):
        dom = page(served, path)  # (no <script in the answer: checked by page())
        assert dom.all("img") == []
        assert HOSTILE in dom.one("main").text()


def test_no_page_loads_or_links_anything_outside_the_server(served: tuple[Served, str]) -> None:
    for path in ("/", "/search?q=web", "/tools/websearch", "/tools/websearch?as_of=" + PAST):
        dom = page(served, path)
        addresses = [node.attrs.get(name) or "" for node in dom.all() for name in ("src", "href", "action")]
        assert [a for a in addresses if a and not a.startswith(("/", "#", "?"))] == [], path


def test_the_tool_pages_need_the_read_scope(served: tuple[Served, str]) -> None:
    server, _ = served
    with server.client() as client:
        for path in ("/search?q=web", "/tools/websearch"):
            assert client.get(path).status_code == 401
            answer = client.get(path, headers={"Accept": "text/html"})
            assert answer.status_code == 303 and answer.headers["location"].startswith("/signin?next=")


def test_the_catalog_pages_by_a_hundred_tools(served: tuple[Served, str]) -> None:
    first = page(served, "/")
    tools = [row.attrs["data-tool"] for row in first.all("tr", data_tool=True)]
    assert first.one(id="page").text() == "1"
    if first.all("a", rel="next"):
        second = page(served, first.one("a", rel="next").attrs["href"])
        assert len(tools) == 100 and not set(tools) & {r.attrs["data-tool"] for r in second.all("tr", data_tool=True)}
    else:
        assert len(tools) < 100
