"""Seed rules 22-24 (docs/operators.md's rules table) through the command line on a real SQLite store and
DuckDB read model: what tests/unit/test_seed_rules_routing.py tells of the catalog, here as an operator
types it, as the read model answers it, and as it stood at an earlier position."""
from __future__ import annotations

from typing import Any

import pytest

from tests.support import error_of, ok


def head(cli: Any) -> int:
    return ok(cli("sql", "SELECT max(position) AS p FROM events"))[0]["p"]


# --- rule 22: `--after-all-classes` (ADR-027's match_all_classes on the "after" side) ----------------------


@pytest.fixture
def vault(cli: Any) -> int:
    """Given get_vault_secret (source:sensitive and store:persistent), get_document (source:sensitive), list_db_rows
    (store:persistent), find_web (sink:network), agent scout, and a rule denying the sink after one call to a
    tool with both classes; returns the rule's position."""
    ok(cli("init", "--policy", "verb-noun"))
    for name, classes in (("get_vault_secret", ["source:sensitive", "store:persistent"]),
                          ("get_document", ["source:sensitive"]), ("list_db_rows", ["store:persistent"]),
                          ("find_web", ["sink:network"])):
        ok(cli("tool", "register", name, "--source", "builtin", "--group", "retrieval", "--tier", "default",
               "--visibility", "public", *[arg for c in classes for arg in ("--class", c)]))
    ok(cli("unit", "create", "eng"))
    ok(cli("agent", "create", "scout", "--unit", "eng"))
    return ok(cli("route", "rule", "add", "no_sink_after_sensitive_store", "--deny-any-class", "sink:network",
                  "--after-all-classes", "source:sensitive", "store:persistent"))["position"]


def test_rule_23_after_a_call_to_a_tool_with_all_the_classes_the_sink_is_denied(vault: int, cli: Any) -> None:
    decision = ok(cli("route", "check", "agent:scout", "--call", "find_web", "--after", "list_db_rows",
                      "--after", "get_vault_secret"))

    assert (decision["decision"], decision["matched_route_rule_id"], decision["after_tool_name"]) == (
        "deny", "no_sink_after_sensitive_store", "get_vault_secret")


def test_rule_23_the_classes_spread_over_two_calls_do_not_arm_the_rule(vault: int, cli: Any) -> None:
    decision = ok(cli("route", "check", "agent:scout", "--call", "find_web", "--after", "get_document",
                      "--after", "list_db_rows"))

    assert decision["decision"] == "allow"


def test_rule_23_the_read_model_keeps_the_after_all_classes_and_decides_as_of_before_the_rule(
        vault: int, cli: Any) -> None:
    [row] = ok(cli("sql", "SELECT after_all_classes, after_any_class FROM route_rules"))
    check = ["route", "check", "agent:scout", "--call", "find_web", "--after", "get_vault_secret", "--at"]

    assert row == {"after_all_classes": ["source:sensitive", "store:persistent"], "after_any_class": []}
    assert ok(cli(*check, str(vault - 1)))["decision"] == "allow"
    assert ok(cli(*check, str(vault)))["decision"] == "deny"
    assert ok(cli("audit", "replay"))["matches"] is True


def test_rule_23_a_malformed_after_class_is_refused_and_writes_nothing(vault: int, cli: Any) -> None:
    before = head(cli)

    run = cli("route", "rule", "add", "r", "--deny-any-class", "sink:network", "--after-all-classes", "Bad Label")

    assert (run.code, error_of(run)["code"]) == (3, "invalid_name")
    assert head(cli) == before


# --- rule 24: ARCH-21's reserved exposure selectors ----------------------------------------------------------


@pytest.mark.parametrize("args", [["effective", "agent:scout"], ["explain", "agent:scout", "find_web"],
                                  ["who-can", "find_web"], ["tool", "list"]])
@pytest.mark.parametrize("selector", ["--execution-profile", "--conversation-kind"])
def test_rule_25_an_inventory_read_refuses_a_reserved_selector_with_exit_3(
        vault: int, cli: Any, args: list[str], selector: str) -> None:
    run = cli(*args, selector, "coding")

    assert (run.code, error_of(run)["code"]) == (3, "unsupported_selector")
    assert error_of(run)["details"]["selector"] == selector.removeprefix("--").replace("-", "_")
    assert ok(cli(*args))  # without it, the subject's answer


# --- rule 23: images run by units (Spring Voyage) --------------------------------------------------------------


@pytest.fixture
def librarian(cli: Any) -> int:
    """Given Spring Voyage's units org > eng > eng-docs, agent scout in eng, and unit eng running the image
    acme/librarian:1.1 (acme.cite, acme.summarize); returns the declaration's position."""
    for args in (["init", "--policy", "spring-voyage"], ["unit", "create", "org"],
                 ["unit", "create", "eng", "--parent", "org"], ["unit", "create", "eng-docs", "--parent", "eng"],
                 ["agent", "create", "scout", "--unit", "eng"]):
        ok(cli(*args))
    return ok(cli("image", "declare", "unit:eng", "--image", "acme/librarian:1.1", "--tool", "acme.cite",
                  "--tool", "acme.summarize"))["position"]


def tools_of(cli: Any, subject: str, *args: str) -> dict[str, str]:
    return {row["tool_id"]: row["provenance"] for row in ok(cli("effective", subject, *args))["tools"]}


def test_rule_24_a_units_image_tools_are_its_own_and_never_inherited(librarian: int, cli: Any) -> None:
    assert tools_of(cli, "unit:eng") == {"acme.cite": "image", "acme.summarize": "image"}
    assert tools_of(cli, "agent:scout") == {} and tools_of(cli, "unit:eng-docs") == {}
    assert tools_of(cli, "unit:org") == {}
    assert tools_of(cli, "unit:eng", "--at", str(librarian - 1)) == {}
    assert [s["subject"] for s in ok(cli("who-can", "acme.cite"))["subjects"]] == ["unit:eng"]
    assert ok(cli("explain", "unit:eng", "acme.cite"))["winner"]["cause"] == "image acme/librarian:1.1"


def test_rule_24_an_explicit_grant_outranks_the_image_and_its_revocation_leaves_the_image(
        librarian: int, cli: Any) -> None:
    ok(cli("grant", "add", "unit:eng", "acme.cite"))
    assert tools_of(cli, "unit:eng")["acme.cite"] == "explicit"
    assert tools_of(cli, "agent:scout") == {"acme.cite": "explicit"}  # the grant is inherited, the image not

    ok(cli("grant", "revoke", "unit:eng", "acme.cite"))
    assert tools_of(cli, "unit:eng") == {"acme.cite": "image", "acme.summarize": "image"}
    assert tools_of(cli, "agent:scout") == {}


def test_rule_24_a_rotated_image_replaces_the_units_tools_and_the_history_agrees(librarian: int, cli: Any) -> None:
    rotated = ok(cli("image", "declare", "unit:eng", "--image", "acme/librarian:1.2", "--tool", "acme.cite"))

    assert tools_of(cli, "unit:eng") == {"acme.cite": "image"}
    versions = ok(cli("sql", "SELECT tool_id, valid_from, valid_to FROM effective_history_of('unit', 'eng') "
                             "ORDER BY tool_id, valid_from"))
    assert versions == [{"tool_id": "acme.cite", "valid_from": librarian, "valid_to": None},
                        {"tool_id": "acme.summarize", "valid_from": librarian, "valid_to": rotated["position"]}]
    assert ok(cli("sql", "SELECT name, image FROM units WHERE name = 'eng'")) == [
        {"name": "eng", "image": "acme/librarian:1.2"}]
    assert ok(cli("audit", "replay"))["matches"] is True
    assert ok(cli("audit", "fingerprint", "--deep"))["fingerprint"] == ok(cli("audit", "fingerprint"))["fingerprint"]


def test_rule_24_a_unit_scoped_route_rule_holds_for_the_units_image_tools(librarian: int, cli: Any) -> None:
    ok(cli("route", "rule", "add", "no-cite-in-eng", "--deny-tool", "acme.cite", "--scope", "unit:eng"))

    assert ok(cli("route", "check", "unit:eng", "--call", "acme.cite"))["decision"] == "deny"
    assert ok(cli("route", "check", "unit:org", "--call", "acme.cite"))["decision"] == "allow"


def test_rule_24_the_manifest_carries_the_units_image_and_plans_nothing_more(
        librarian: int, cli: Any, tmp_path: Any) -> None:
    target = tmp_path / "catalog.yaml"
    ok(cli("export", "--format", "manifest", "-o", str(target)))

    assert "acme/librarian:1.1" in target.read_text()
    assert ok(cli("plan", str(target)))["commands"] == []


def test_rule_24_an_unknown_unit_running_an_image_is_refused_and_writes_nothing(librarian: int, cli: Any) -> None:
    before = head(cli)

    run = cli("image", "declare", "unit:nowhere", "--image", "acme/librarian:1.1", "--tool", "acme.cite")

    assert (run.code, error_of(run)["code"]) == (3, "unknown_subject")
    assert head(cli) == before
