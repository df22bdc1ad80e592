"""`audit what-if`: the history replayed under another naming policy, in a scratch read model."""
from __future__ import annotations

from typing import Any

from tests.support import error_of, ok


def test_the_catalogs_own_policy_refuses_nothing_and_changes_nothing(story: int, cli: Any) -> None:
    answer = ok(cli("audit", "what-if", "--policy", "tyrum"))
    assert answer == {"policy": "tyrum", "position": story, "refused": [], "effects": {}}


def test_verb_first_naming_would_have_refused_registrations_and_taken_their_tools_away(cli: Any) -> None:
    # given a catalog under the tyrum policy where an agent is granted `read` and `gh.issue`
    for command in (["init", "--policy", "tyrum"],
                    ["tool", "register", "read", "--source", "builtin", "--group", "core", "--tier", "default",
                     "--visibility", "public"],
                    ["connector", "register", "gh", "--tool", "gh.issue"],
                    ["unit", "create", "eng"], ["agent", "create", "triage", "--unit", "eng"],
                    ["grant", "add", "agent:triage", "read"], ["connector", "bind", "gh", "--unit", "eng"]):
        ok(cli(*command))
    head = ok(cli("sql", "SELECT max(position) AS p FROM events"))[0]["p"]
    # when it is replayed under verb-noun naming (ADR-0030's verb_noun)
    answer = ok(cli("audit", "what-if", "--policy", "verb-noun"))
    # then both registrations would have failed with the rule's own code, and the agent would lack both
    assert [(r["id"], r["code"]) for r in answer["refused"]] == [("read", "invalid_id"),
                                                                 ("gh.issue", "invalid_id")]
    assert answer["effects"]["agent:triage"] == {"gains": [], "loses": ["gh.issue", "read"], "changes": []}
    # and nothing was written
    assert ok(cli("sql", "SELECT max(position) AS p FROM events"))[0]["p"] == head
    # and --at asks about an earlier point of the history: before the grant only the registrations count
    early = ok(cli("audit", "what-if", "--policy", "verb-noun", "--at", "2"))
    assert [r["id"] for r in early["refused"]] == ["read"] and early["effects"] == {}
    outside = cli("audit", "what-if", "--policy", "verb-noun", "--at", str(head + 1))
    assert (outside.code, error_of(outside)["code"]) == (2, "usage")
