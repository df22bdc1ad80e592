"""Past reads take an alias as it was then: `who-can ALIAS --at/--as-of` and `explain SUBJECT ALIAS --at`
answer for an alias retired since, while it was live at the moment asked; at or after its retirement they
refuse it (exit 3, `retired_alias`), as reads of now do. On the bundled example (`examples/tyrum.toolcat`),
whose `mcp.memory.search` was retired."""
from __future__ import annotations

from typing import Any

from tests.support import ok

RETIRED = "mcp.memory.search"


def retired_at(toolcat: Any) -> int:
    rows = ok(toolcat("sql", "SELECT e.position FROM events e WHERE e.type = 'Tool.AliasRetired' "
                             f"AND e.data->>'alias' = '{RETIRED}'"))
    assert len(rows) == 1, rows
    return int(rows[0]["position"])


def test_who_can_and_explain_take_an_alias_as_it_was_at_that_position(story: int, toolcat: Any) -> None:
    # given the alias was live until its retirement
    retired = retired_at(toolcat)
    before = retired - 1

    # when who-can asks for it before then, then the tool it named answers
    then = ok(toolcat("who-can", RETIRED, "--at", str(before)))
    assert then["tool_id"] == "memory.search" and then["position"] == before
    # and the same by time: the instant the event before the retirement was recorded
    recorded = ok(toolcat("sql", f"SELECT recorded_at::VARCHAR AS t FROM events WHERE position = {before}"))[0]["t"]
    by_time = ok(toolcat("who-can", RETIRED, "--as-of", recorded.replace(" ", "T")))
    assert by_time["tool_id"] == "memory.search" and by_time["subjects"] == then["subjects"]
    # and explain takes it too
    why = ok(toolcat("explain", "agent:triage", RETIRED, "--at", str(before)))
    assert why["tool_id"] == "memory.search"

    # when asked at its retirement or now, then it is refused as retired
    for args in (("who-can", RETIRED, "--at", str(retired)), ("who-can", RETIRED),
                 ("explain", "agent:triage", RETIRED, "--at", str(retired))):
        refused = toolcat(*args)
        assert refused.code == 3 and refused.error["code"] == "retired_alias", args


def test_a_mistyped_subject_or_tool_gets_a_did_you_mean(story: int, toolcat: Any) -> None:
    # when a tool's name is mistyped by a letter, then the error names the tool meant
    unknown = toolcat("who-can", "memory.serch")
    assert unknown.code == 3 and unknown.error["details"]["did_you_mean"] == "memory.search"
    assert "did you mean 'memory.search'?" in unknown.error["message"]
    # and a subject's
    subject = toolcat("effective", "agent:triag")
    assert subject.error["code"] == "unknown_subject" and subject.error["details"]["did_you_mean"] == "agent:triage"
    explained = toolcat("explain", "agent:triag", "memory.search", "--at", "50")
    assert explained.error["details"]["did_you_mean"] == "agent:triage"
    # and nothing is guessed for a name far from every one
    assert "did_you_mean" not in toolcat("who-can", "zzzzzzzz.qqqq").error["details"]
