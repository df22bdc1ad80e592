"""The analyst's first question, "who could call tool X at time T, and why", in one command: `who-can`
answers every subject with its provenance and exposure, now or as of a past position or time."""
from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from tests.expected import check_expected
from tests.support import error_of, ok, run_in_process, toolcat_environ, toolcat_in_process

STORY = [
    ["init", "--policy", "tyrum"],
    ["tool", "register", "read", "--source", "builtin", "--group", "core", "--tier", "default",
     "--visibility", "public"],
    ["alias", "add", "read", "tool.fs.read", "--shim"],
    ["tool", "register", "grep", "--source", "builtin", "--group", "core", "--tier", "default",
     "--visibility", "public"],
    ["unit", "create", "eng"],
    ["agent", "create", "triage", "--unit", "eng"],
    ["agent", "create", "ops", "--unit", "eng"],
    ["agent", "allowlist", "ops", "grep"],
    ["agent", "create", "solo", "--unit", "eng"],
    ["grant", "add", "unit:eng", "read"],
    ["grant", "add", "agent:solo", "read"],
]
REVOKE = ["grant", "revoke", "unit:eng", "read"]


@pytest.fixture
def catalog(home: Path) -> int:
    """The story, then the unit's grant revoked; answers the position before the revoke."""
    run_in_process(home, STORY)
    with toolcat_environ("analyst"):
        before = ok(toolcat_in_process(home, "sql", "SELECT max(position) AS p FROM events", "--json"))[0]["p"]
    run_in_process(home, [REVOKE])
    return before


def who_can(home: Path, *args: str) -> dict:
    with toolcat_environ("analyst"):
        return ok(toolcat_in_process(home, "who-can", *args, "--json"))


def test_who_can_answers_every_subject_with_its_provenance_and_exposure(home: Path, catalog: int) -> None:
    # when the analyst asks who could call `read` before the revoke (through its shim, as a gateway would)
    then = who_can(home, "tool.fs.read", "--at", str(catalog))
    # then every subject that saw it is listed once, with why and how
    assert then["tool_id"] == "read" and then["position"] == catalog
    assert then["subjects"] == [
        {"subject": "agent:ops", "provenance": "explicit", "inherited_from": "eng",
         "exposure": "disabled_by_agent_allowlist"},
        {"subject": "agent:solo", "provenance": "explicit", "inherited_from": None, "exposure": "enabled"},
        {"subject": "agent:triage", "provenance": "explicit", "inherited_from": "eng", "exposure": "enabled"},
        {"subject": "unit:eng", "provenance": "explicit", "inherited_from": None, "exposure": None},
    ]
    # and now, after the revoke, only the agent with a grant of its own still sees it
    assert [s["subject"] for s in who_can(home, "read")["subjects"]] == ["agent:solo"]


def test_who_can_as_expected_table(request: pytest.FixtureRequest, home: Path, catalog: int) -> None:
    with toolcat_environ("analyst"):
        run = toolcat_in_process(home, "who-can", "read", "--at", str(catalog))
    assert run.code == 0, run.stderr
    check_expected(request, "who_can/read.txt", run.stdout)


def test_who_can_refuses_an_unknown_tool(home: Path, catalog: int) -> None:
    with toolcat_environ("analyst"):
        run = toolcat_in_process(home, "who-can", "reed", "--json")
    assert run.code == 3
    assert error_of(run)["code"] == "unknown_tool"


def test_a_date_alone_means_the_end_of_that_day_and_says_so(home: Path, catalog: int) -> None:
    today = datetime.datetime.now(datetime.timezone.utc).date()
    # when the analyst gives today's date alone, then everything recorded today counts (not its first instant)
    now = who_can(home, "read", "--as-of", today.isoformat())
    assert now["as_of"] == f"{today.isoformat()}T23:59:59.999999+00:00"
    assert [s["subject"] for s in now["subjects"]] == ["agent:solo"]
    # and yesterday's date is before the catalog existed
    yesterday = (today - datetime.timedelta(days=1)).isoformat()
    assert who_can(home, "read", "--as-of", yesterday) == {
        "tool_id": "read", "position": 0, "subjects": [], "as_of": f"{yesterday}T23:59:59.999999+00:00"}
