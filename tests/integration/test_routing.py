"""Route decisions through the command line on a real SQLite store and DuckDB read model (ADR-027): seed
004's example as a story — `get_document` is source:sensitive, `find_web` and its alias `web_search` (the
seed's literal name) are sink:network — with the evidence, as of any position, across a rename, and the
history tables that answer "which denials would rule R have made?"."""
from __future__ import annotations

from typing import Any

import pytest

from tests.doc_text import history_questions
from tests.support import error_of, ok

RULE = "no_sink_after_sensitive_source"
EVIDENCE = ("decision", "matched_tool_name", "matched_tool_classes", "matched_route_rule_id", "reason_code")


@pytest.fixture
def seed_004(cli: Any) -> int:
    """Given seed 004's catalog under the verb-noun policy and its rule; returns the rule's position."""
    for args in (["init", "--policy", "verb-noun"],
                 ["tool", "register", "get_document", "--source", "builtin", "--group", "retrieval", "--tier",
                  "default", "--visibility", "public", "--class", "source:local", "--class", "source:sensitive"],
                 ["tool", "register", "find_web", "--source", "builtin", "--group", "retrieval", "--tier",
                  "default", "--visibility", "public"],
                 ["alias", "add", "find_web", "web_search"],
                 ["tool", "classify", "find_web", "--class", "sink:network"],
                 ["unit", "create", "eng"], ["agent", "create", "scout", "--unit", "eng"]):
        ok(cli(*args))
    return ok(cli("route", "rule", "add", RULE, "--deny-any-class", "sink:network", "sink:external",
                  "--after-any-class", "source:sensitive"))["position"]


def evidence(document: dict[str, Any]) -> dict[str, Any]:
    return {k: document[k] for k in EVIDENCE}


DENIED = {"decision": "deny", "matched_tool_name": "find_web", "matched_tool_classes": ["sink:network"],
          "matched_route_rule_id": RULE, "reason_code": "denied_by_class_rule"}


@pytest.mark.parametrize("called", ["find_web", "web_search"])
def test_after_a_sensitive_read_the_sink_is_denied_by_every_name_with_the_canonical_in_evidence(
        seed_004: int, cli: Any, called: str) -> None:
    decision = ok(cli("route", "check", "agent:scout", "--call", called, "--after", "get_document"))

    assert evidence(decision) == DENIED
    assert (decision["called"], decision["after_tool_name"]) == (called, "get_document")


def test_without_a_sensitive_read_the_sink_is_allowed(seed_004: int, cli: Any) -> None:
    decision = ok(cli("route", "check", "agent:scout", "--call", "web_search"))

    assert evidence(decision) == {**DENIED, "decision": "allow", "matched_route_rule_id": None,
                                  "reason_code": "no_rule_matched"}


def test_decisions_replay_as_of_any_position(seed_004: int, cli: Any) -> None:
    removed = ok(cli("route", "rule", "remove", RULE))["position"]
    check = ["route", "check", "agent:scout", "--call", "web_search", "--after", "get_document", "--at"]

    assert ok(cli(*check, str(seed_004 - 1)))["decision"] == "allow"  # before the rule
    assert evidence(ok(cli(*check, str(seed_004)))) == DENIED
    assert ok(cli(*check, str(removed)))["decision"] == "allow"
    assert ok(cli("route", "check", "agent:scout", "--call", "web_search", "--after", "get_document"))[
        "decision"] == "allow"


def test_a_name_rule_written_with_an_alias_holds_for_every_name_after_a_rename(
        seed_004: int, cli: Any) -> None:
    ok(cli("route", "rule", "add", "a_no_web_after_reading", "--deny-tool", "web_search",
           "--after-tool", "get_document", "--scope", "unit:eng"))
    ok(cli("tool", "rename", "find_web", "find_internet"))

    for called in ("find_internet", "find_web", "web_search"):
        decision = ok(cli("route", "check", "agent:scout", "--call", called, "--after", "get_document"))
        assert evidence(decision) == {**DENIED, "matched_tool_name": "find_internet",
                                      "matched_route_rule_id": "a_no_web_after_reading",
                                      "reason_code": "denied_by_tool_rule"}, called


def test_classes_have_history_and_every_live_name_carries_the_canonical_classes(seed_004: int, cli: Any) -> None:
    ok(cli("tool", "classify", "web_search", "--class", "sink:network", "--class", "sink:external"))

    assert ok(cli("tool", "show", "web_search"))["classes"] == ["sink:network", "sink:external"]
    versions = ok(cli("sql", "SELECT h.classes, h.valid_to IS NULL AS current FROM tool_class_history h JOIN tools t "
                             "USING (tool_key) WHERE t.canonical_id = 'find_web' ORDER BY h.valid_from"))
    assert versions == [{"classes": ["sink:network"], "current": False},
                        {"classes": ["sink:network", "sink:external"], "current": True}]
    names = ok(cli("sql", "SELECT tool_name, classes FROM tool_classes WHERE canonical_id = 'find_web' "
                          "ORDER BY tool_name"))
    assert names == [{"tool_name": "find_web", "classes": ["sink:network", "sink:external"]},
                     {"tool_name": "web_search", "classes": ["sink:network", "sink:external"]}]


def test_a_bad_route_command_is_refused_and_writes_nothing(seed_004: int, cli: Any) -> None:
    head = ok(cli("sql", "SELECT max(position) AS p FROM events"))[0]["p"]
    cases = [(["route", "rule", "add", "r"], 2, "usage"),
             (["route", "rule", "add", RULE, "--deny-tool", "find_web"], 3, "duplicate_route_rule"),
             (["route", "rule", "add", "r", "--deny-tool", "fetch_page"], 3, "unknown_tool"),
             (["route", "rule", "remove", "nope"], 3, "unknown_route_rule"),
             (["route", "check", "agent:nobody", "--call", "web_search"], 3, "unknown_subject"),
             (["route", "check", "agent:scout", "--call", "fetch_page"], 3, "unknown_tool"),
             (["route", "check", "agent:scout", "--call", "tool.node.dispatch"], 3, "not_model_facing"),
             (["route", "check", "agent:scout", "--call", "web_search", "--at", "9999"], 2, "usage"),
             (["tool", "classify", "find_web"], 2, "usage")]
    for args, code, error in cases:
        run = cli(*args)
        assert (run.code, error_of(run)["code"]) == (code, error), args
    assert ok(cli("sql", "SELECT max(position) AS p FROM events"))[0]["p"] == head


def test_the_routing_read_model_replays_bit_for_bit(seed_004: int, cli: Any) -> None:
    ok(cli("tool", "classify", "get_document", "--class", "source:sensitive"))
    ok(cli("route", "rule", "remove", RULE))

    replay = ok(cli("audit", "replay"))
    assert replay["matches"] is True
    assert ok(cli("audit", "replay", "--until", str(seed_004)))["matches"] is True


def documented_denials_query(rule_id: str) -> str:
    """The analysts' question "which denials would rule R have made over the last month?", for rule_id."""
    [query] = [q for q in history_questions() if "route_rule_history" in q]
    return query.replace("'no-network-sink-after-sensitive-source'", f"'{rule_id}'")


def test_the_documented_question_which_denials_would_rule_r_have_made(seed_004: int, cli: Any) -> None:
    rows = ok(cli("sql", documented_denials_query(RULE)))

    assert [(r["denied_call"], r["after_any_of"], r["rule_from"]) for r in rows] == [
        ("find_web", ["get_document"], seed_004), ("web_search", ["get_document"], seed_004)]


def test_an_agents_effective_rows_may_list_the_classes_last_as_of_any_position(seed_004: int, cli: Any) -> None:
    ok(cli("grant", "add", "agent:scout", "web_search"))
    before = ok(cli("tool", "classify", "find_web", "--class", "sink:external"))["position"] - 1

    now = ok(cli("effective", "agent:scout", "--with-classes"))["tools"]
    then = ok(cli("effective", "agent:scout", "--with-classes", "--at", str(before)))["tools"]
    assert [(r["tool_id"], r["exposure"], r["classes"]) for r in now] == [("find_web", "enabled", ["sink:external"])]
    assert list(now[0])[-1] == "classes" and then[0]["classes"] == ["sink:network"]
    assert "classes" not in ok(cli("effective", "agent:scout"))["tools"][0]
