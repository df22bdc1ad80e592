"""End to end (issue 32): the operator's console about subjects, on a real `toolcat serve` of the bundled
tyrum story written under its own clock (January to November 2026):

- a subject's set as known on a past date, with the tools it has lost since, and the changes between
  two dates, each with the event that made it;
- why a subject saw a tool then, and why it no longer does;
- the deprecations with what is due next and the catalog's references that still name an alias;
- the MCP servers and the gateway's denials;
- the history's integrity in every page's header and in `/v1/health`, red once a stored event is altered;
- an operator's story in Chromium (selenium): a subject at a past date, a tool later revoked.

The tests read what a person looks for (a name, a date, a verdict) in the page's text.
"""
from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psutil
import pytest

from infra.dev.demo import EXAMPLES, script
from infra.dev.example_clock import ExampleClock
from infra.http.integrity import NICENESS
from tests.browser import Node, click_and_leave, driven_chromium, parse_dom, png_size
from tests.integration.test_audit_seals import ACTOR, FORGED, tamper
from tests.serving import Served, serving
from tests.support import ok, toolcat_environ, toolcat_in_process

TRIAGE = "/subjects/" + quote("agent:triage", safe="")
# The story's revocation: `grant revoke agent:triage websearch` at 2026-10-12T15:30 UTC.
BEFORE_REVOKE, AFTER_REVOKE = "2026-10-01", "2026-10-13"
FAST_CHECKS = {"TOOLCAT_INTEGRITY_SECONDS": "0.2"}


def build_story(home: Path) -> None:
    """The tyrum example, each command recorded at its clock's time (as `make demo` writes it)."""
    clock = ExampleClock()
    with toolcat_environ("tester"):
        for moment, args in script(EXAMPLES / "tyrum.toolcat"):
            if moment is not None:
                clock.set(moment)
            with clock.recording():
                run = toolcat_in_process(home, *args)
                assert run.code == 0, (args, run.stderr)
        ok(toolcat_in_process(home, "project", "--json"))


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("console") / "story"
    build_story(home)
    return home


@pytest.fixture(scope="module")
def served(story: Path) -> Iterator[Served]:
    with serving(story, env=FAST_CHECKS) as server:
        yield server


def page(server: Served, path: str, status: int = 200) -> Node:
    with server.client() as client:
        answer = client.get(path)
    assert answer.status_code == status, answer.text
    return parse_dom(answer.text)


def rows(dom: Node, table: str) -> dict[str, str]:
    """The tools of a table, each with its row's whole text."""
    return {row.attrs["data-tool"]: row.text() for row in dom.one("table", id=table).all("tr", data_tool=True)}


def wait_for_integrity(server: Served, verdict: str, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    with server.client() as client:
        while True:
            health = client.get("/v1/health").json()
            if health["integrity"]["verdict"] == verdict:
                return health  # type: ignore[no-any-return]
            assert time.monotonic() < deadline, f"integrity never became {verdict}: {health}"
            time.sleep(0.2)


def test_a_subject_as_known_on_a_past_date_shows_the_tool_it_lost_since(served: Served) -> None:
    # given triage's websearch grant, revoked on 12 October
    # when the operator opens triage as known at the end of 1 October
    dom = page(served, f"{TRIAGE}?as_of={BEFORE_REVOKE}")
    # then the page says which moment it shows, and websearch is there, marked as gone since
    assert "As known at 2026-10-01 (the end of that day, UTC)" in dom.one(id="moment-shown").text()
    then = rows(dom, "effective")
    assert "websearch" in then and "not in the set now" in then["websearch"]
    assert "not in the set now" not in then["grep"]
    # and today's set no longer has it
    assert "websearch" not in rows(page(served, TRIAGE), "effective")


def test_the_changes_between_two_dates_name_the_revocation_with_its_date_and_actor(served: Served) -> None:
    # when the operator compares triage's set between 1 and 13 October
    dom = page(served, f"{TRIAGE}?from={BEFORE_REVOKE}&to={AFTER_REVOKE}")
    changes = [row.text() for row in dom.one("table", id="change-list").all("tr", class_="change")]
    # then the one change is websearch removed, on 12 October, by the revocation, with its reason
    assert len(changes) == 1
    assert "websearch" in changes[0] and "removed" in changes[0]
    assert "2026-10-12 15:30" in changes[0] and "triage no longer browses" in changes[0]
    # and a span given backwards is refused with what was wrong
    wrong = page(served, f"{TRIAGE}?from={AFTER_REVOKE}&to={BEFORE_REVOKE}", status=400)
    assert "comes after" in wrong.one(id="error").text()


def test_why_a_subject_saw_a_tool_then_and_why_it_does_not_now(served: Served) -> None:
    then = page(served, f"{TRIAGE}/tools/websearch?as_of={BEFORE_REVOKE}")
    assert then.one("h1").text() == "Why agent:triage sees websearch"
    now = page(served, f"{TRIAGE}/tools/websearch")
    assert now.one("h1").text() == "Why agent:triage does not see websearch"
    assert "it left the set at position" in now.one(id="verdict").text()
    assert "2026-10-12" in now.one(id="verdict").text()


def test_a_bad_moment_is_refused_with_a_reason(served: Served) -> None:
    assert "not an ISO 8601 time" in page(served, f"{TRIAGE}?as_of=yesterday", status=400).one(id="error").text()
    assert "outside the history" in page(served, f"{TRIAGE}?at=999999", status=400).one(id="error").text()
    assert "give at or as_of" in page(served, f"{TRIAGE}?at=3&as_of=2026-10-01", status=400).one(id="error").text()


def test_the_deprecations_say_what_was_done_and_that_nothing_names_a_migrated_alias(served: Served) -> None:
    dom = page(served, "/deprecations")
    (retired,) = dom.all("section", data_alias="mcp.memory.search")
    text = retired.text()
    # `alias migrate` rewrote triage's allowlist before step 2: nothing names the retired ID, all is met
    assert "complete" in text and "findings" not in text
    assert retired.all("tr", class_="use") == []
    # the steps done are listed with the milestones' release, and the timeline gives dates
    assert "shipped in 1.2.0" in text
    assert "2026-08-03" in retired.one("svg").text()
    assert retired.one("a", href="/v1/audit/report?alias=mcp.memory.search")


def test_the_mcp_and_gateway_pages_say_when_there_is_nothing(served: Served) -> None:
    assert "No MCP server registered" in page(served, "/mcp-servers").one("table", id="mcp-servers").text()
    assert "No call refused" in page(served, "/gateway/denials").one("table", id="denials").text()


def test_every_page_header_shows_the_chain_check(served: Served) -> None:
    health = wait_for_integrity(served, "verified")
    assert health["status"] == "ok" and health["integrity"]["events"] == health["position"]
    for path in ("/", TRIAGE, "/deprecations", "/mcp-servers", "/gateway/denials", f"{TRIAGE}/tools/grep"):
        header = page(served, path).one(id="integrity")
        assert header.attrs["data-verdict"] == "verified"
        assert f"chain of {health['position']} events" in header.text()


def test_the_chain_check_runs_below_the_servers_priority(served: Served) -> None:
    # given a server whose integrity watch has checked the chain
    wait_for_integrity(served, "verified")
    # then its check worker is a child process niced below the server: the walk takes only what requests leave
    server = psutil.Process(served.process.pid)
    niced = [child.nice() for child in server.children(recursive=True)]
    assert min(server.nice() + NICENESS, 19) in niced, (server.nice(), niced)


def test_an_altered_history_turns_every_header_red_and_health_reports_it(
        story: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(story, home, ignore=shutil.ignore_patterns("serve.json"))  # (the other server's address)
    with serving(home, env=FAST_CHECKS) as server:
        wait_for_integrity(server, "verified")
        # when someone rewrites the actor of the stored event at position 8 behind the server's back
        tamper(home, 8, lambda state: state.replace(ACTOR, FORGED, 1))
        # then /v1/health reports the history altered at that position (the server itself stays ok)
        health = wait_for_integrity(server, "altered")
        assert health["status"] == "ok"
        assert health["integrity"]["position"] == 8
        assert "position 8 was altered" in health["integrity"]["message"]
        # and every page's header says so, with the position
        for path in ("/", TRIAGE, "/deprecations"):
            header = page(server, path).one(id="integrity")
            assert header.attrs["data-verdict"] == "altered"
            assert header.one(id="altered-position").text() == "8"
            assert "History altered at position 8" in header.text()


def test_an_operator_opens_a_subject_at_a_past_date_and_sees_a_tool_later_revoked(served: Served) -> None:
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.wait import WebDriverWait

    with driven_chromium() as driver:
        driver.set_window_size(1280, 900)
        # the operator opens the catalog, then triage's page
        driver.get(served.url + "/")
        driver.find_element("link text", "agent:triage").click()
        assert "websearch" not in [row.get_attribute("data-tool")
                                   for row in driver.find_elements("css selector", "#effective tr.tool")]
        # picks 1 October 2026 in the date field and asks for the set as known then
        field = driver.find_element("id", "as_of")
        driver.execute_script("arguments[0].value = arguments[1]", field, BEFORE_REVOKE)
        click_and_leave(driver, driver.find_element("css selector", "#moment button"))
        # and sees websearch, marked as no longer in the set
        row = driver.find_element("css selector", '#effective tr[data-tool="websearch"]')
        assert "not in the set now" in row.text
        assert "As known at 2026-10-01" in driver.find_element("id", "moment-shown").text
        shot = driver.get_screenshot_as_png()
        assert png_size(shot)[0] > 0
        if os.environ.get("TOOLCAT_DOC_SCREENSHOT"):  # docs/console.png is made by this test
            Path(os.environ["TOOLCAT_DOC_SCREENSHOT"]).write_bytes(shot)
        # then follows websearch to see why triage saw it then
        row.find_element("css selector", "a.why").click()
        WebDriverWait(driver, 60).until(expected_conditions.title_contains("websearch"))
        assert driver.find_element("tag name", "h1").text == "Why agent:triage sees websearch"
        assert "As known at position" in driver.find_element("id", "moment-shown").text
