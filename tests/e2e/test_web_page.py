"""End to end: the web page (infra/http/web.py) over the example story's real read model, served by uvicorn
on a free loopback port and rendered by headless Chromium: the catalog by family with lifecycle badges,
every alias in its deprecation window with the audit report's timeline, a subject's effective set, the
"why" of one tool, the error pages, and history values shown as text, never run as markup.
"""
from __future__ import annotations

import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import duckdb
import pytest
import uvicorn
from fastapi import FastAPI

from infra.http.console_subjects import console_subjects_router
from infra.http.console_subjects import console_subjects_router
from infra.http.console_tools import console_tools_router
from infra.http.web import web_router
from infra.report_html import timeline_svg
from infra.timeline_svg import marks
from projections import queries
from projections.audit_report import audit_report
from projections.effective.reads import explanation
from projections.rows import select_rows
from tests.browser import Node, headless, parse_dom, png_size
from tests.support import SCRIPT, run_in_process

HOSTILE = '<script>document.title="pwned"</script><img src=x onerror="document.title=\'pwned\'">&amp; "quoted"'
REGISTER = ["--source", "plugin", "--plugin", "acme", "--group", "extension", "--tier", "advanced",
            "--visibility", "public"]
# The example story, and after it: a tool whose description is markup, granted to the agent, and a second
# grant that shadows an inherited one.
EXTRA = [["tool", "register", "acme.notes.render", *REGISTER, "--description", HOSTILE],
         ["grant", "add", "agent:triage", "acme.notes.render"], ["grant", "add", "agent:triage", "grep"],
         ["project"]]


@dataclass
class Site:
    url: str
    con: duckdb.DuckDBPyConnection  # the read model the site serves, for the expected answers

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """The web page's router in a FastAPI app of its own, on uvicorn, over the story's read model."""
    home = tmp_path_factory.mktemp("web") / "home"
    run_in_process(home, [*SCRIPT, *EXTRA])
    with closing(duckdb.connect(str(home / "catalog.duckdb"), read_only=True)) as con:
        app = FastAPI()
        for router in (web_router(con.cursor), console_subjects_router(con.cursor), console_tools_router(con.cursor)):
            app.include_router(router)
        app.include_router(console_subjects_router(con.cursor))
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 60
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        try:
            yield Site(f"http://127.0.0.1:{listener.getsockname()[1]}", con)
        finally:
            server.should_exit = True
            thread.join(timeout=30)
            listener.close()


def rendered(site: Site, path: str, tmp_path: Path) -> Node:
    """The page's DOM after Chromium loaded it (and ran whatever it would run)."""
    return parse_dom(headless(tmp_path, "--dump-dom", site.url + path).stdout)


def subject_path(subject: str, tool: str | None = None) -> str:
    return f"/subjects/{quote(subject, safe='')}" + (f"/tools/{quote(tool, safe='')}" if tool else "")


def test_the_catalog_lists_every_tool_by_family_with_lifecycle_badges(
        browser: str, site: Site, tmp_path: Path) -> None:
    dom = rendered(site, "/", tmp_path)
    shown = {section.attrs["data-family"]: [row.attrs["data-tool"] for row in section.all("tr", data_tool=True)]
             for section in dom.all("section", class_="family")}
    tools = select_rows(site.con, "SELECT family, canonical_id FROM tools ORDER BY family, canonical_id")
    expected: dict[str, list[str]] = {}
    for tool in tools:
        expected.setdefault(tool["family"] or "(no family)", []).append(tool["canonical_id"])
    assert shown == expected
    assert len(tools) > 50

    badges = {}
    for row in dom.all("tr", data_tool=True):
        assert [b.text() for b in row.all("span", class_="badge")][0] == "canonical"
        for alias in row.all("span", class_="alias-id"):
            badges[alias.attrs["data-alias"]] = (row.attrs["data-tool"],
                                                 [b.text() for b in alias.all("span", class_="badge")])
    # a retired ID is no longer descriptor metadata (removal step 4); the audit report keeps it
    aliases = select_rows(site.con, "SELECT a.alias, t.canonical_id, a.lifecycle, a.shim FROM aliases a "
                                    "JOIN tools t USING (tool_key) WHERE a.lifecycle <> 'retired'")
    assert badges == {a["alias"]: (a["canonical_id"], [a["lifecycle"]] + (["shim"] if a["shim"] else []))
                      for a in aliases}
    assert {lifecycle for _, (_, (lifecycle, *_)) in badges.items()} == {"alias", "deprecated"}
    assert dom.one(id="position").text() == str(audit_report(site.con)["position"])


def test_every_alias_in_a_deprecation_window_has_the_audit_reports_timeline(
        browser: str, site: Site, tmp_path: Path) -> None:
    # (the windows are the deprecations page's; `/` counts them and links there)
    dom = rendered(site, "/deprecations", tmp_path)
    windows = {w.attrs["data-alias"]: w for w in dom.all("section", class_="deprecation")}
    expected = [r["alias"] for r in select_rows(site.con, "SELECT alias FROM aliases WHERE lifecycle <> 'alias' "
                                                          "ORDER BY alias")]
    assert sorted(windows) == expected and len(expected) >= 4
    _, html = site.get("/deprecations")
    for alias, window in windows.items():
        report = audit_report(site.con, alias)["aliases"][0]
        assert window.one("h2").all("span", class_="badge")[0].text() == report["state"]
        positions = [mark.position for mark in marks(report)]
        circles = [int(c.attrs["data-position"]) for c in window.all("circle")]
        assert sorted(circles) == sorted(positions)
        if positions:  # the very drawing of the audit report, not another one
            assert window.one("svg").attrs["aria-label"] == f"timeline of {alias}"
            assert timeline_svg(report) in html
    # the deprecation, four milestones, steps 1 and 2, the retirement (steps 3 and 4 as one) and step 5
    assert len(windows["mcp.memory.search"].all("circle")) == 9


def test_a_subjects_page_shows_its_effective_set_with_provenance_and_exposure(
        browser: str, site: Site, tmp_path: Path) -> None:
    home = rendered(site, "/", tmp_path)
    links = {a.text(): a.attrs["href"] for a in home.all("a", class_="subject")}
    assert links == {s: subject_path(s) for s in ("agent:triage", "unit:eng", "unit:support")}

    dom = rendered(site, links["agent:triage"], tmp_path)
    rows = [[row.attrs["data-tool"], row.one(class_="provenance").text(), row.one(class_="inherited").text(),
             row.one(class_="exposure").text()] for row in dom.one("table", id="effective").all("tr", data_tool=True)]
    expected = queries.current_effective(site.con, "agent:triage")
    assert rows == [[t["tool_id"], t["provenance"], t["inherited_from"] or "", t["exposure"]] for t in expected]
    assert {t["exposure"] for t in expected} >= {"enabled", "disabled_by_state_mode", "disabled_by_agent_allowlist"}
    assert {t["inherited_from"] for t in expected} >= {None, "eng", "support"}
    for row in dom.one("table", id="effective").all("tr", data_tool=True):
        assert row.one("a", class_="why").attrs["href"] == subject_path("agent:triage", row.attrs["data-tool"])
        assert row.one("a", class_="tool-link").attrs["href"] == "/tools/" + quote(row.attrs["data-tool"], safe="")

    for subject in ("unit:eng", "unit:support"):  # units too, without exposure
        status, html = site.get(links[subject])
        assert status == 200
        shown = [r.attrs["data-tool"] for r in parse_dom(html).all("tr", data_tool=True)]
        assert shown == [t["tool_id"] for t in queries.current_effective(site.con, subject)]


def test_the_why_of_one_tool_shows_the_winning_way_and_what_it_shadows(
        browser: str, site: Site, tmp_path: Path) -> None:
    for tool in ("grep", "websearch", "memory.write", "bash"):
        explained = explanation(site.con, ("agent", "triage"), queries.lookup(site.con, tool))
        dom = rendered(site, subject_path("agent:triage", tool), tmp_path)
        heading = dom.one("h1").text()
        if not explained["visible"]:
            assert heading == f"Why agent:triage does not see {tool}"
            assert dom.all("table", id="ways") == []
            continue
        assert heading == f"Why agent:triage sees {tool}"
        ways = [[cell.text() for cell in row.all("td")] for row in dom.all("tr", class_="way")]
        assert ways == [[verdict, w["cause"], w["provenance"], w["inherited_from"] or "", w["exposure"] or "",
                         str(w["position"])]
                        for verdict, w in zip(["wins"] + ["shadowed"] * len(explained["shadowed"]),
                                              [explained["winner"], *explained["shadowed"]])]
        assert explained["winner"]["cause"] in dom.one(id="verdict").text()
        if tool == "grep":
            assert len(ways) == 2  # granted to the agent, and inherited from eng
    assert not explanation(site.con, ("agent", "triage"), queries.lookup(site.con, "bash"))["visible"]


def inert(site: Site, path: str, tmp_path: Path) -> Node:
    """The page at `path` as the browser made it, after checking that nothing of it runs: no script and no
    image in the served HTML nor in the DOM, and the title not taken over."""
    status, html = site.get(path)
    assert status == 200
    assert "<script" not in html and "<img" not in html
    dom = rendered(site, path, tmp_path)
    assert dom.all("script") == [] and dom.all("img") == []
    assert dom.one("title").text() != "pwned"
    return dom


def test_values_from_the_history_are_shown_as_text_and_never_run(browser: str, site: Site, tmp_path: Path) -> None:
    for path in ("/", subject_path("agent:triage")):
        dom = inert(site, path, tmp_path)
        (row,) = [r for r in dom.all("tr", data_tool="acme.notes.render")]
        assert HOSTILE in row.text()
    # the same description in a past set, and the tool's name among the changes, on the console's pages
    head = audit_report(site.con)["position"]
    for path in (f"{subject_path('agent:triage')}?at={head}&from=0&to={head}", "/deprecations"):
        inert(site, path, tmp_path)
    dom = parse_dom(site.get(f"{subject_path('agent:triage')}?at={head}&from=0&to={head}")[1])
    assert HOSTILE in dom.one("table", id="effective").one("tr", data_tool="acme.notes.render").text()
    assert [row.attrs["data-change"] for row in dom.all("tr", class_="change", data_tool="acme.notes.render")
            ] == ["added"]


@pytest.mark.parametrize(("path", "status", "code"), [
    (subject_path("agent:nobody"), 404, "unknown_subject"),
    ("/subjects/triage", 400, "usage"),
    (subject_path("agent:triage", "no.such.tool"), 404, "unknown_tool"),
    (subject_path("agent:triage", "mcp.memory.search"), 410, "retired_alias"),
])
def test_a_page_for_what_is_not_there_says_so(site: Site, path: str, status: int, code: str) -> None:
    answered, html = site.get(path)
    assert answered == status
    assert parse_dom(html).one("p", id="error").attrs["data-code"] == code


def test_chromium_takes_screenshots_of_the_catalog_and_a_subject(browser: str, site: Site, tmp_path: Path) -> None:
    for name, path in (("catalog", "/"), ("subject", subject_path("agent:triage"))):
        shot = tmp_path / f"{name}.png"
        headless(tmp_path, f"--screenshot={shot}", "--window-size=1200,1600", site.url + path)
        data = shot.read_bytes()
        assert len(data) > 10_000
        assert png_size(data) == (1200, 1600)
